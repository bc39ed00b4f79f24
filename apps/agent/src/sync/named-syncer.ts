import type { RampartClient } from '@rampart/client';
import type { AgentCapabilities, DomainRecord, FileRecord, UrlRecord } from '@rampart/contracts';
import type { Enforcer, IndicatorKind, PluginLogger } from '@rampart/plugin-kit';
import type { AgentMetrics } from '../runtime/metrics.ts';
import type { BlockPolicy } from './block-state.ts';
import type { EnforcerWorker } from './enforcer-worker.ts';
import { sendFeedback } from './feedback.ts';
import { EMPTY_NAMED_SET, NamedBlockState, countNamedRemovals, namedSetOps, type NamedEvaluation, type NamedRecordInput, type NamedSet } from './named-block-state.ts';
import type { NamedFeedStateFile } from './named-feed-state.ts';
import { KindSyncer, type KindCodec, type SyncKind, type SyncerOptions } from './kind-syncer.ts';

export type NamedKind = Exclude<IndicatorKind, 'ipv4'>;

type NamedRecord = DomainRecord | UrlRecord | FileRecord;

export interface NamedSyncerDeps {
  kind: NamedKind;
  client: RampartClient;
  state: NamedBlockState;
  feedState: NamedFeedStateFile;
  enforcers: () => EnforcerWorker<NamedSet>[];
  policy: () => BlockPolicy;
  log: PluginLogger;
  metrics: AgentMetrics;
  options: () => SyncerOptions;
  /** The agent's id, for feedback (none before registration). */
  gaid?: () => string | undefined;
  /** Announced with each feedback. */
  capabilities?: () => AgentCapabilities;
  now?: () => number;
}

/** The values of one feed record of a kind (a file record: every digest it carries). */
export function recordInput(kind: NamedKind, record: NamedRecord): NamedRecordInput {
  const values =
    kind === 'domain' ? [(record as DomainRecord).domain] : kind === 'url' ? [(record as UrlRecord).url] : [(record as FileRecord).sha256, (record as FileRecord).sha1, (record as FileRecord).md5];
  return { values: values.filter((v) => v !== ''), score: record.score, ts: record.ts, decision: record.decision ?? -1 };
}

/** `/…/score/{m}` takes 1 < m < 1000: the threshold clamped into it. */
function listMinScore(threshold: number): number {
  return Math.min(999.999, Math.max(1.001, threshold));
}

/**
 * A named kind (domain, URL, file digest): the kind's own feed (unpaged) and score list (domains
 * as HTTP with the scheme stripped, file digests one walk per algorithm), a set of canonical
 * values, a whitelist handed to the enforcers that take one (a change makes each replace whole),
 * and metrics and logs labelled with the kind.
 */
class NamedCodec implements KindCodec<NamedSet, string[], NamedRecord, NamedEvaluation> {
  /** What `Enforcer.allow` was last given, joined (a change makes every enforcer replace whole). */
  private allowedKey = '';
  private allowedValues: string[] = [];

  constructor(private readonly deps: NamedSyncerDeps) {}

  tag(sync?: SyncKind): Record<string, string> {
    return sync ? { kind: this.deps.kind, sync } : { kind: this.deps.kind };
  }

  size(set: NamedSet): number {
    return set.values.length;
  }

  empty(): NamedSet {
    return EMPTY_NAMED_SET;
  }

  countRemovals(from: NamedSet, to: NamedSet): number {
    return countNamedRemovals(from, to);
  }

  workerOps() {
    return {
      ...namedSetOps,
      onSettled: (w: EnforcerWorker<NamedSet>) => void sendFeedback({ ...this.deps, gaid: this.deps.gaid ?? (() => undefined), threshold: () => this.deps.policy().threshold }, w),
    };
  }

  prepare(enforcer: Enforcer): void {
    enforcer.allow?.(this.allowedValues);
  }

  feed(cursor: number) {
    const { client, kind } = this.deps;
    return kind === 'domain' ? client.domainsFeed(cursor) : kind === 'url' ? client.urlsFeed(cursor) : client.filesFeed(cursor);
  }

  ingest(record: NamedRecord): void {
    this.deps.state.ingestRecord(recordInput(this.deps.kind, record));
  }

  fed(): void {
    this.deps.metrics.kindKnown.set({ kind: this.deps.kind }, this.deps.state.size);
  }

  /** The kind's score list: every value the server says the organization should block now. */
  async list(): Promise<string[]> {
    const { client, kind, policy } = this.deps;
    const min = listMinScore(policy().threshold);
    const values: string[] = [];
    const walk = async (query: Parameters<RampartClient['scoreList']>[2], strip = '') => {
      for await (const page of client.scoreList(kind, min, query)) for (const item of page.items) values.push(strip && item.startsWith(strip) ? item.slice(strip.length) : item);
    };
    if (kind === 'domain') await walk({ protocol: 'HTTP' }, 'http://');
    else if (kind === 'url') await walk({});
    else for (const digest of ['SHA256', 'SHA1', 'MD5'] as const) await walk({ digest });
    return values;
  }

  listSize(values: string[]): number {
    return values.length;
  }

  /** Hands a changed whitelist to the enforcers that take one; they then rewrite their target whole. */
  adopted(): void {
    const values = this.deps.state.allowed();
    const key = values.join('\n');
    if (key === this.allowedKey) return;
    this.allowedKey = key;
    this.allowedValues = values;
    for (const w of this.deps.enforcers()) {
      if (!w.enforcer.allow) continue;
      w.enforcer.allow(values);
      w.requireReplace();
    }
  }

  setSize(size: number): void {
    this.deps.metrics.kindSetSize.set({ kind: this.deps.kind }, size);
  }

  counted(sync: SyncKind, outcome: 'ok' | 'refused'): void {
    this.deps.metrics.kindSyncs.inc({ kind: this.deps.kind, sync, outcome });
  }

  /** The last-sync gauge is the IPv4 feed's. */
  synced(): void {}

  async load() {
    const saved = await this.deps.feedState.load();
    if (!saved) return undefined;
    for (const entry of saved.entries) this.deps.state.restore(entry);
    return { cursor: saved.cursor, listedAt: saved.listedAt, indicators: saved.entries.length };
  }

  async save(cursor: number, listedAt: number): Promise<void> {
    await this.deps.feedState.save({ cursor, listedAt, entries: this.deps.state.entries() });
  }
}

/** The syncer of one named kind: the generic one over the named codec (see KindSyncer). */
export class NamedSyncer extends KindSyncer<NamedSet, string[], NamedRecord, NamedEvaluation> {
  constructor(private readonly deps: NamedSyncerDeps) {
    super(deps, new NamedCodec(deps));
  }

  get kind(): NamedKind {
    return this.deps.kind;
  }

  get state(): NamedBlockState {
    return this.deps.state;
  }
}
