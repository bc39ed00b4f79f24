import type { z } from 'zod';
import type { IpsLabel } from '@rampart/contracts';
import type { IndicatorKind } from './kinds.ts';
import type { PluginLogger } from './logger.ts';
import type { CommandResult, RunOptions } from './shell.ts';

/**
 * One entry of a block list: the indicator in its kind's canonical form (kinds.ts: for IPv4 a
 * CIDR, `203.0.113.7/32`; a domain `xn--bcher-kva.example`; a URL as WHATWG serializes it; a
 * digest in upper-case hex) with the live score that ranks it when a backend's capacity forces a
 * cut. One enforcer instance takes one kind (`EnforcerContext.kind`).
 */
export interface BlockEntry {
  value: string;
  score: number;
}

/**
 * A change to the desired set. Removals apply first, then additions (a CIDR named in both ends
 * up enforced); adding a CIDR already present updates its score; removing an absent one is a
 * no-op. Inputs that are not IPv4 CIDRs are ignored and counted.
 */
export interface Diff {
  add: BlockEntry[];
  remove: string[];
}

export interface EnforcerHealth {
  ok: boolean;
  detail?: string;
}

/** What a `sync` or `apply` really did, for feedback and metrics. */
export interface EnforceResult {
  /** Entries enforced after the call. */
  enforced: number;
  /**
   * Entries of the desired set left out, after the call, because the backend's capacity was
   * reached (lowest scores first): a gauge for feedback and metrics, not a count of this call.
   */
  cut: number;
  /** Inputs of the call ignored because they are not IPv4 CIDRs (omitted when none). */
  invalid?: number;
}

/** What `reconcile` found and did. */
export interface ReconcileResult extends EnforceResult {
  /** True when the target differed from what this enforcer last committed and was re-asserted. */
  drifted: boolean;
}

/** One part of a target that holds its own copy of the set (a feed of a feed server). */
export type EnforcerPart = { name: string; enforced: number; cut: number } & Record<string, unknown>;

/**
 * What an enforcer knows of its target beyond the counts, as JSON for /healthz and `rampart-agent
 * status`: `parts`, when the target has several (each exported as a metric by part), and any
 * detail (devices it drives, when they last pulled).
 */
export type EnforcerStatus = { parts?: EnforcerPart[] } & Record<string, unknown>;

/**
 * The enforcer contract (conventions §3). Every method is idempotent; the desired set it
 * receives has already been filtered by the never-block list, decisions and thresholds.
 *
 * Every method takes an `AbortSignal`. The agent runs each enforcer on its own queue with its own
 * timeout, and aborts the signal when the call's timeout passes, when the slot is withdrawn or
 * replaced, or when the agent stops. An enforcer passes it to what it waits for (child
 * processes, fetch, SSH channels, SDK calls) so that an aborted call ends promptly and rejects
 * with the signal's reason; the agent then treats the target as unknown and replaces it whole at
 * the next call. Callers outside the agent (tests, tools) may omit it.
 */
export interface Enforcer {
  /** Can the backend be reached and changed now? No side effects. */
  healthcheck(signal?: AbortSignal): Promise<EnforcerHealth>;
  /** Atomically replaces everything this enforcer owns with `desired`. */
  sync(desired: BlockEntry[], signal?: AbortSignal): Promise<EnforceResult>;
  /** Applies a diff; batches commit one by one. Re-applying the same diff changes nothing. */
  apply(diff: Diff, signal?: AbortSignal): Promise<EnforceResult>;
  /**
   * Reads back what the real target enforces now, never a cache: canonical CIDRs
   * (`203.0.113.7/32`), sorted with `sortCidrs` (numeric by network, then prefix length).
   */
  list(signal?: AbortSignal): Promise<string[]>;
  /**
   * Optional: reads back the target and, when someone else changed or flushed it (a firewall
   * reload, `nft flush ruleset`), re-asserts the last committed set with a full replace. The agent
   * calls it every reconcile interval; without it, the agent compares `list()` and calls `sync`.
   */
  reconcile?(signal?: AbortSignal): Promise<ReconcileResult>;
  /** Releases connections; safe to call twice. Does not withdraw rules (see `withdraw`). */
  close(signal?: AbortSignal): Promise<void>;
  /** Removes every rule this enforcer placed (used for `running = no`). */
  withdraw(signal?: AbortSignal): Promise<void>;
  /** The backend's real capacity in entries (Infinity when none applies). */
  readonly capacity: number;
  /**
   * Optional, for domains, URLs and digests: the values the organization whitelisted by decision
   * (sorted, canonical). They are never in the desired set already; an enforcer whose target can
   * state an exception to a wider rule keeps them and writes them at its next `sync` (an RPZ
   * `rpz-passthru.` for a name under a blocked parent's `*.` rule). No I/O: the agent calls
   * `sync` after a change.
   */
  allow?(values: readonly string[]): void;
  /** Optional: the target's detail (no I/O, cheap: read at every /healthz and scrape). */
  status?(): EnforcerStatus;
}

export interface EnforcerContext {
  log: PluginLogger;
  /**
   * The indicator kind this instance enforces (default `ipv4`). The agent creates one instance
   * per kind that `EnforcerDefinition.kindsOf(config)` turns on, each with its own queue.
   */
  kind?: IndicatorKind;
  /** Runs a command line through the shell the way operators configure reload commands. */
  run?(command: string, options?: RunOptions): Promise<CommandResult>;
}

export interface EnforcerDefinition<C = unknown> {
  /** Folder name of the plugin, e.g. `nftables`. */
  name: string;
  /** The `ips` label this enforcer serves. */
  serves: IpsLabel;
  /** Validates the `ips.<label>` entry merged with the plugin's local options; no I/O. */
  configSchema: z.ZodType<C>;
  /** The indicator kinds this plugin can enforce (default `['ipv4']`). */
  kinds?: readonly IndicatorKind[];
  /**
   * The kinds a validated config turns on, a subset of `kinds` (default `['ipv4']`). The agent
   * syncs a kind's feed only while some configured enforcer takes it.
   */
  kindsOf?(config: C): readonly IndicatorKind[];
  create(config: C, ctx: EnforcerContext): Promise<Enforcer>;
}

/** The kinds `definition` enforces under `config`. */
export function enforcerKinds<C>(definition: EnforcerDefinition<C>, config: C): readonly IndicatorKind[] {
  const able = definition.kinds ?? ['ipv4'];
  return (definition.kindsOf?.(config) ?? ['ipv4']).filter((kind) => able.includes(kind));
}

export function defineEnforcer<C>(definition: EnforcerDefinition<C>): EnforcerDefinition<C> {
  return definition;
}
