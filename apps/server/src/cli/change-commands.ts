import pino from 'pino';
import { InvalidArgumentError, type Command } from 'commander';
import { ApiError, DecisionReason, Ipv4OrNetwork, MAX_DECISION_REASON, type IndicatorKindName } from '@rampart/contracts';
import { loadConfig } from '../config.ts';
import { audit, cliActor } from '../services/operators/audit.ts';
import { applyDecision, canonicalValue, type DecisionApplied } from '../services/decisions.ts';
import { createEnrichment } from '../services/enrichment/enrichment.ts';
import { eventBus, type EventBus } from '../services/events.ts';
import { ReportBatcher } from '../services/ipv4/ingest.ts';
import { Ipv4Reports } from '../services/ipv4/reports.ts';
import { openStore, type Organization, type Store } from '../store/index.ts';

/*
 * `rampart decision add|clear` and `rampart agent deactivate`: changes from the host, through the
 * same services as the API (services/decisions.ts: the group-commit engine for IPv4, the feeds
 * re-delivered, the agents told over the event bus), each printed as JSON and audited under
 * `cli:<host user>`. Times in the output are ISO 8601 UTC.
 */

const KINDS: readonly IndicatorKindName[] = ['ipv4', 'domain', 'url', 'file'];

/** The kind a value reads as: an address or network, a digest (32, 40 or 64 hex), a URL (`scheme://`), else a domain. */
export function kindOfValue(value: string): IndicatorKindName {
  if (Ipv4OrNetwork.safeParse(value).success) return 'ipv4';
  if (/^([0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64})$/i.test(value)) return 'file';
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return 'url';
  return 'domain';
}

/** `--ttl`: seconds, or a number with s, m, h or d; at most 10 years. */
export function ttlSeconds(value: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(value.trim());
  const seconds = m ? Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'] : Number.NaN;
  if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds > 315_360_000) throw new InvalidArgumentError('expected a duration such as 3600, 90m, 24h or 7d (1 second to 10 years)');
  return seconds;
}

function reasonOption(value: string): string {
  const parsed = DecisionReason.safeParse(value);
  if (!parsed.success) throw new InvalidArgumentError(`at most ${MAX_DECISION_REASON} characters`);
  return parsed.data;
}

function kindOption(value: string): IndicatorKindName {
  if (!(KINDS as readonly string[]).includes(value)) throw new InvalidArgumentError('expected ipv4, domain, url or file');
  return value as IndicatorKindName;
}

export async function organization(store: Store, gid: string): Promise<Organization> {
  const org = await store.orgs.byGid(gid);
  if (!org) throw new ApiError('not_found', `no organization ${gid}`);
  return org;
}

export async function withStore(fn: (store: Store) => Promise<unknown>): Promise<void> {
  const config = loadConfig();
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, owner: 'cli' });
  try {
    process.stdout.write(`${JSON.stringify(await fn(store), null, 2)}\n`);
  } catch (err) {
    if (err instanceof ApiError) throw new Error(err.detail ?? err.code);
    throw err;
  } finally {
    await store.close();
  }
}

function track(list: Array<Promise<void>>, p: Promise<void>): Promise<void> {
  list.push(p);
  return p;
}

export interface DecisionCommand {
  org: string;
  value: string;
  kind?: IndicatorKindName | undefined;
  decision: -1 | 0 | 1;
  /** Seconds from now (blocks of IPv4 only). */
  ttl?: number | undefined;
  reason?: string | undefined;
}

/** What `decision add|clear` prints: the change, `ttl` as ISO 8601 UTC. */
export type DecisionPrinted = Omit<DecisionApplied, 'ttl'> & { organization: string; ttl: string | null };

/**
 * What a CLI command needs to report and decide as the API does (the report batcher over the
 * store, the event bus): `sent()` resolves once every notification it published (decision_changed,
 * feed_changed) has gone out, so the servers tell their agents before the store closes.
 */
export function cliReporting(store: Store): { config: ReturnType<typeof loadConfig>; store: Store; events: EventBus; ipv4Reports: Ipv4Reports; sent(): Promise<unknown> } {
  const config = loadConfig();
  const log = pino({ level: 'warn' }, pino.destination(2));
  const bus = eventBus(store.connection);
  const published: Array<Promise<void>> = [];
  const events: EventBus = { ...bus, publish: (event) => track(published, bus.publish(event)) };
  const batcher = new ReportBatcher({ ingest: store.ipv4Ingest, events, log });
  const ipv4Reports = new Ipv4Reports({ config, store, enrichment: createEnrichment({ dataDir: config.dataDir }), batcher });
  return { config, store, events, ipv4Reports, sent: () => Promise.all(published) };
}

/** Sets or clears one decision of the organization, through services/decisions.ts, audited as the CLI. */
export async function decideFromCli(store: Store, c: DecisionCommand, now = Math.floor(Date.now() / 1000)): Promise<DecisionPrinted> {
  const org = await organization(store, c.org);
  const kind = c.kind ?? kindOfValue(c.value);
  const value = canonicalValue(kind, c.value, 'value');
  if (c.ttl !== undefined && (kind !== 'ipv4' || c.decision !== 1)) throw new ApiError('validation_failed', '--ttl applies only to a block of an IPv4 address or network');
  const reporting = cliReporting(store);
  const applied = await applyDecision(reporting, org.id, cliActor(), { kind, value, decision: c.decision, ttl: c.ttl === undefined ? undefined : now + c.ttl, reason: c.reason }, 'value');
  await reporting.sent();
  return { ...applied, organization: org.gid, ttl: applied.ttl === null ? null : new Date(applied.ttl * 1000).toISOString() };
}

/** Deactivates an agent (every key stops working, its live connection closes), audited as the CLI. */
export async function deactivateFromCli(store: Store, gid: string, gaid: string): Promise<{ organization: string; gaid: string; state: 'deactivated' }> {
  const org = await organization(store, gid);
  if (!(await store.agents.deactivate(org.id, gaid))) throw new ApiError('not_found', `no agent ${gaid} in organization ${gid}`);
  await audit(store, cliActor(), { orgId: org.id, action: 'agent.deactivate', target: gaid, detail: {} });
  // Servers on the same PostgreSQL hear this and close the agent's live connection.
  await eventBus(store.connection).publish({ type: 'agent_revoked', org_id: org.id, gaid });
  return { organization: org.gid, gaid, state: 'deactivated' };
}

export function registerChangeCommands(groups: { agent: Command; decision: Command }): void {
  const common = (cmd: Command) =>
    cmd
      .argument('<value>', 'an IPv4 address or CIDR network, a domain, a URL or an MD5/SHA1/SHA256 digest')
      .requiredOption('--org <gid>', 'organization id (RMP-GID-...)')
      .option('--kind <kind>', 'ipv4, domain, url or file (default: read from the value)', kindOption)
      .option('--reason <text>', `why (at most ${MAX_DECISION_REASON} characters; kept with the decision and in the audit log)`, reasonOption);
  common(groups.decision.command('add').description("set the organization's decision: block (default) or --whitelist; printed as JSON and audited"))
    .option('--whitelist', 'whitelist instead of block')
    .option('--ttl <duration>', 'a block of an IPv4 value ends after this long: seconds, or 90m, 24h, 7d', ttlSeconds)
    .action((value: string, o: { org: string; kind?: IndicatorKindName; reason?: string; whitelist?: boolean; ttl?: number }) =>
      withStore((store) => decideFromCli(store, { org: o.org, value, kind: o.kind, decision: o.whitelist ? 0 : 1, ttl: o.ttl, reason: o.reason })),
    );
  common(groups.decision.command('clear').description("clear the organization's decision (the score decides again); printed as JSON and audited")).action(
    (value: string, o: { org: string; kind?: IndicatorKindName; reason?: string }) => withStore((store) => decideFromCli(store, { org: o.org, value, kind: o.kind, decision: -1, reason: o.reason })),
  );
  groups.agent
    .command('deactivate')
    .description('deactivate an agent: every key it holds stops working, the record stays; printed as JSON and audited')
    .argument('<gaid>', 'agent id (RMP-AGENT-ID-...)')
    .requiredOption('--org <gid>', 'organization id (RMP-GID-...)')
    .action((gaid: string, o: { org: string }) => withStore((store) => deactivateFromCli(store, o.org, gaid)));
}
