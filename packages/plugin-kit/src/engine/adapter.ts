import type { BlockEntry } from '../enforcer.ts';

/** A change relative to what the adapter's last successful write left on the target. */
export interface TargetChange {
  /** Entries to add, in the kind's list order. */
  add: BlockEntry[];
  /** Canonical values to remove, in the kind's list order. */
  remove: string[];
}

/**
 * The primitives one target system offers (in the spirit of cs-firewall-bouncer's backends).
 * The engine (`createEngineEnforcer`) owns everything else: the desired set, the capacity cut,
 * the first seed, the choice between a batch and a full replace, drift, withdraw, metrics and
 * logs. An adapter keeps no model of what should be enforced; it may cache what it knows of
 * the target (a list id, whether a set exists) and must pass `signal` on to what it waits for.
 */
export interface EnforcerAdapter {
  /**
   * What the target enforces now, read from it (never a cache): canonical values in any order.
   * A target that is absent, or present but not wired to block (a set no rule matches), enforces
   * nothing and reads as `[]`.
   */
  read(signal?: AbortSignal): Promise<string[]>;
  /**
   * Replaces everything this enforcer owns on the target with `entries` (canonical, within the
   * capacity, in list order), as atomically as the target allows, and (re)creates whatever makes
   * them block (rules, chains). Also how drift is repaired, so it must not trust any cache.
   */
  replaceAll(entries: readonly BlockEntry[], signal?: AbortSignal): Promise<void>;
  /**
   * Optional incremental path: applies `change` to a target that holds what the last successful
   * `replaceAll` or `applyBatch` left. `all()` returns the whole enforced set (list order) for
   * targets rewritten whole (a list file). A throw makes the engine fall back to `replaceAll`.
   * Without it, every change is a `replaceAll`.
   */
  applyBatch?(change: TargetChange, all: () => BlockEntry[], signal?: AbortSignal): Promise<void>;
  /** Removes everything this enforcer placed (entries and the rules that use them). Idempotent. */
  removeAll(signal?: AbortSignal): Promise<void>;
  /** Can the target be reached and changed now? No side effects; throws what is wrong. */
  probe(signal?: AbortSignal): Promise<void>;
  /** Releases connections; safe to call twice. */
  close?(signal?: AbortSignal): Promise<void>;
  /**
   * Optional: what `read` returns (in any order, duplicates counted) when the target holds
   * `enforced` (in any order), for targets that store another, equivalent form: nft keeps only the
   * outermost of nested networks; AWS holds the top entries twice, in two layers.
   */
  expected?(enforced: readonly BlockEntry[]): string[];
  /**
   * True when the target does not care about order (a kernel set): `replaceAll` and `all()` then
   * get the entries in any order, which spares a sort of the whole set per write.
   */
  readonly unordered?: boolean;
}
