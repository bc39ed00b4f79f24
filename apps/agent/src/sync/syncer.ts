import type { RampartClient } from '@rampart/client';
import type { BlockEntry, Diff, PluginLogger } from '@rampart/plugin-kit';
import { ipv4Key, type AgentCapabilities, type Ipv4Record } from '@rampart/contracts';
import type { AgentMetrics } from '../runtime/metrics.ts';
import { BlockState, countRemovals, diffKeySets, ipv4SetOps, toEntries, type BlockPolicy, type Evaluation, type KeySet } from './block-state.ts';
import type { Attestation, EnforcerWorker } from './enforcer-worker.ts';
import { sendFeedback } from './feedback.ts';
import type { FeedStateFile } from './feed-state.ts';
import { KindSyncer, type KindCodec, type SyncKind, type SyncerOptions } from './kind-syncer.ts';

export { SyncRefusedError, removalAllowed, syncerOptionsOf, type SyncKind, type SyncerOptions } from './kind-syncer.ts';

export interface SyncerDeps {
  client: RampartClient;
  state: BlockState;
  feedState: FeedStateFile;
  enforcers: () => EnforcerWorker[];
  policy: () => BlockPolicy;
  gaid: () => string | undefined;
  /** Announced with each feedback. */
  capabilities?: () => AgentCapabilities;
  log: PluginLogger;
  metrics: AgentMetrics;
  options: () => SyncerOptions;
  now?: () => number;
  /**
   * A full collection after a large change has settled; default `globalThis.gc` (node
   * --expose-gc), absent without it. Called with `LAST_RESORT_GC`, which node's gc() takes.
   */
  gc?: (options: typeof LAST_RESORT_GC) => void;
}

/** A table this large is collected after every sync (see `adopted`). */
const LARGE_TABLE = 100_000;

/**
 * How the collection after a large change runs: V8's last-resort flavour compacts the heap and
 * hands the freed pages back to the system at once. A plain gc() frees the objects but keeps
 * their pages mapped until V8's memory reducer runs, 20-60 s later and not at all on a host too
 * busy to leave the agent idle: 1,000,000 addresses then held 282 MB instead of ~150 MB
 * (bench/results/agent-busy.md; issue 35 item 7).
 */
export const LAST_RESORT_GC = { type: 'major', execution: 'sync', flavor: 'last-resort' } as const;

/**
 * The IPv4 kind: the /ips feed (paged by `pageSize`) and the /ipv4 list (asked with the agent's
 * id and first enforcer), a sorted key set whose list and diff every worker shares through
 * one-slot memos, the never-block count and read-back interval in each feedback, and a garbage
 * collection after a large change has settled.
 */
class Ipv4Codec implements KindCodec<KeySet, number[], Ipv4Record, Evaluation> {
  /** One-slot memos: every worker that converges on the same sets shares one diff and one list. */
  private entriesMemo: { set: KeySet; entries: BlockEntry[] } | undefined;
  private diffMemo: { from: KeySet; to: KeySet; diff: Diff } | undefined;
  private largeChange = false;
  /** Each worker's last read-back seen by `settled`. */
  private readonly readBacks = new WeakMap<EnforcerWorker, Attestation>();
  /** Entries the never-block list kept out of the last evaluation (reported with each feedback). */
  private protectedCount = 0;

  constructor(private readonly deps: SyncerDeps) {}

  tag(sync?: SyncKind): Record<string, string> {
    return sync ? { kind: sync } : {};
  }

  size(set: KeySet): number {
    return set.keys.length;
  }

  empty(): KeySet {
    return { keys: new Float64Array(0), ranks: new Uint16Array(0) };
  }

  countRemovals(from: KeySet, to: KeySet): number {
    return countRemovals(from, to);
  }

  workerOps() {
    return {
      entries: (set: KeySet) => {
        if (this.entriesMemo?.set !== set) this.entriesMemo = { set, entries: toEntries(set) };
        return this.entriesMemo.entries;
      },
      diff: (from: KeySet, to: KeySet) => {
        if (this.diffMemo?.from !== from || this.diffMemo.to !== to) this.diffMemo = { from, to, diff: diffKeySets(from, to) };
        return this.diffMemo.diff;
      },
      size: ipv4SetOps.size,
      contains: ipv4SetOps.contains,
      onSettled: (w: EnforcerWorker) => this.settled(w),
    };
  }

  private settled(w: EnforcerWorker): void {
    // A read-back of a large set (the reconcile loop's, every reconcile_seconds) leaves its list
    // of values behind: ~80 MB of strings at 1,000,000.
    const readBack = w.attested;
    if (readBack && this.readBacks.get(w) !== readBack) {
      this.readBacks.set(w, readBack);
      if (readBack.held >= LARGE_TABLE) this.largeChange = true;
    }
    void sendFeedback(
      { ...this.deps, threshold: () => this.deps.policy().threshold, protectedCount: () => this.protectedCount, reconcileSeconds: () => this.deps.options().reconcileSeconds },
      w,
    );
    this.collectIfIdle();
  }

  private collectIfIdle(): void {
    if (this.deps.enforcers().some((x) => x.pending)) return;
    // All caught up: drop the shared list and diff. A large change leaves ~100 bytes of garbage
    // per entry (the BlockEntry array the enforcers take); an idle daemon allocates too little to
    // trigger a collection, so it would carry it until the next burst. The packaged agent runs
    // with --expose-gc for this. The collection waits for the next turn of the event loop: now,
    // the worker's call that handed the list to the enforcer is still on the stack and holds it.
    this.entriesMemo = undefined;
    this.diffMemo = undefined;
    if (this.largeChange) {
      this.largeChange = false;
      const gc = this.deps.gc ?? (globalThis as { gc?: (options: typeof LAST_RESORT_GC) => void }).gc;
      if (gc) setImmediate(() => gc(LAST_RESORT_GC));
    }
  }

  feed(cursor: number) {
    return this.deps.client.ipsFeed(cursor, { page_size: this.deps.options().pageSize });
  }

  ingest(record: Ipv4Record): void {
    this.deps.state.ingestRecord({ ip: record.ip, score: record.score, ts: record.ts, decision: record.decision ?? -1, ttl: record.ttl });
  }

  fed(): void {
    this.deps.metrics.tableSize.set(this.deps.state.table.size);
  }

  async list(): Promise<number[]> {
    const { client, policy, gaid } = this.deps;
    const threshold = Math.min(1000, Math.max(1, policy().threshold));
    const keys: number[] = [];
    const plugin = this.deps.enforcers()[0]?.label;
    const g = gaid();
    for await (const page of client.ipv4List(threshold, { ...(g ? { agid: g } : {}), ...(plugin ? { plugin } : {}) })) {
      for (const item of page.items) {
        const key = ipv4Key(item);
        if (key >= 0) keys.push(key);
      }
    }
    return keys;
  }

  listSize(keys: number[]): number {
    return keys.length;
  }

  adopted(next: Evaluation, additions: number, removals: number): void {
    if (additions + removals > 10_000 || (next.keys.length > 10_000 && this.deps.enforcers().some((w) => w.needsReplace))) this.largeChange = true;
    // Every evaluation of a large table leaves ~26 bytes an entry of typed arrays behind (its
    // sort buffer, the set it replaces): ~60 MB a sync at 1,000,000, held until V8 collects,
    // which an agent idle between syncs rarely does by itself.
    if (this.deps.state.table.size >= LARGE_TABLE) this.largeChange = true;
    this.protectedCount = next.protectedCount;
  }

  setSize(size: number): void {
    this.deps.metrics.setSize.set(size);
  }

  counted(sync: SyncKind, outcome: 'ok' | 'refused'): void {
    this.deps.metrics.syncs.inc({ kind: sync, outcome });
  }

  synced(now: number): void {
    this.deps.metrics.lastSync.set(now);
  }

  async load() {
    const saved = await this.deps.feedState.load();
    if (!saved) return undefined;
    this.deps.state.table = saved.table;
    return { cursor: saved.cursor, listedAt: saved.listedAt, indicators: saved.table.size };
  }

  async save(cursor: number, listedAt: number): Promise<void> {
    await this.deps.feedState.save({ cursor, listedAt, table: this.deps.state.table });
    // The snapshot written (20 bytes an entry) is garbage now.
    if (this.deps.state.table.size >= LARGE_TABLE) {
      this.largeChange = true;
      this.collectIfIdle();
    }
  }
}

/** The IPv4 syncer: the generic one over the IPv4 codec (see KindSyncer). */
export class Syncer extends KindSyncer<KeySet, number[], Ipv4Record, Evaluation> {
  constructor(deps: SyncerDeps) {
    super(deps, new Ipv4Codec(deps));
  }
}
