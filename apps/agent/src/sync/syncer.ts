import type { RampartClient } from '@rampart/client';
import type { Enforcer, PluginLogger } from '@rampart/plugin-kit';
import type { AgentMetrics } from '../runtime/metrics.ts';
import { BlockState, countRemovals, diffKeySets, ipv4SetOps, toEntries, type BlockPolicy, type KeySet } from './block-state.ts';
import type { BlockEntry, Diff } from '@rampart/plugin-kit';
import { ipv4Key, type AgentCapabilities } from '@rampart/contracts';
import { EnforcerWorker } from './enforcer-worker.ts';
import { sendFeedback } from './feedback.ts';
import type { FeedStateFile } from './feed-state.ts';

export interface SyncerOptions {
  pageSize: number;
  forceSync: boolean;
  maxRemovalFraction: number;
  /** Removals below this count are never refused (removing 1 of 2 entries is no catastrophe). */
  minGuardedRemovals: number;
  /** Shortest and longest wait of the local-decay timer. */
  decayTimerMs?: { min: number; max: number };
  /** How often the saved feed state may be rewritten. */
  saveEveryMs?: number;
  /** Longest one enforcer call may run before it is aborted (default 120 s). */
  enforcerTimeoutMs?: number;
  /** How often the agent reads its targets back (reported with each feedback). */
  reconcileSeconds?: number;
}

/** The sync options of the agent's local configuration (every kind's syncer uses the same). */
export function syncerOptionsOf(local: {
  feed_page_size: number;
  force_sync: boolean;
  max_removal_fraction: number;
  enforcer_timeout_seconds: number;
  reconcile_seconds: number;
}): SyncerOptions {
  return {
    pageSize: local.feed_page_size,
    forceSync: local.force_sync,
    maxRemovalFraction: local.max_removal_fraction,
    minGuardedRemovals: 10,
    enforcerTimeoutMs: local.enforcer_timeout_seconds * 1000,
    reconcileSeconds: local.reconcile_seconds,
  };
}

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
  /** A full collection after a large change has settled; default `globalThis.gc` (node --expose-gc), absent without it. */
  gc?: () => void;
}

export class SyncRefusedError extends Error {
  constructor(
    readonly reason: 'mass_removal' | 'empty_list',
    readonly detail: Record<string, number>,
  ) {
    super(`sync refused: ${reason}`);
    this.name = 'SyncRefusedError';
  }
}

export type SyncKind = 'incremental' | 'full' | 'decay' | 'decision' | 'reconcile';

/**
 * The mass-removal guard of every kind: a sync may remove at most `maxRemovalFraction` of the
 * enforced set (fewer than `minGuardedRemovals` removals always pass), unless forced.
 */
export function removalAllowed(previous: number, removals: number, force: boolean, opts: Pick<SyncerOptions, 'forceSync' | 'maxRemovalFraction' | 'minGuardedRemovals'>): boolean {
  return force || opts.forceSync || removals < opts.minGuardedRemovals || removals <= previous * opts.maxRemovalFraction;
}

/**
 * Keeps the enforcers in line with the server: pulls the /ips feed from the saved cursor,
 * reconciles with the /ipv4 list, evaluates the block state and hands each enforcer's worker
 * the new set. One operation at a time here; the enforcers apply independently (each worker its
 * own queue, timeout and failure state), so one stalled target delays no other and no sync. A
 * decay timer re-runs the evaluation when the next entry drops below the threshold, without
 * asking the server.
 */
export class Syncer {
  cursor = 0;
  lastSyncAt = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private decayTimer: NodeJS.Timeout | undefined;
  private lastSave = 0;
  private dirty = false;
  private withdrawn = false;
  /** One-slot memos: every worker that converges on the same sets shares one diff and one list. */
  private entriesMemo: { set: KeySet; entries: BlockEntry[] } | undefined;
  private diffMemo: { from: KeySet; to: KeySet; diff: Diff } | undefined;
  private largeChange = false;
  /** Entries the never-block list kept out of the last evaluation (reported with each feedback). */
  private protectedCount = 0;

  constructor(private readonly deps: SyncerDeps) {}

  /** A worker for an enforcer instance (EnforcerSlots creates one per slot). */
  worker(label: string, enforcer: Enforcer): EnforcerWorker {
    return new EnforcerWorker(label, enforcer, {
      log: this.deps.log,
      metrics: this.deps.metrics,
      timeoutMs: () => this.deps.options().enforcerTimeoutMs ?? 120_000,
      entries: (set) => {
        if (this.entriesMemo?.set !== set) this.entriesMemo = { set, entries: toEntries(set) };
        return this.entriesMemo.entries;
      },
      diff: (from, to) => {
        if (this.diffMemo?.from !== from || this.diffMemo.to !== to) this.diffMemo = { from, to, diff: diffKeySets(from, to) };
        return this.diffMemo.diff;
      },
      size: ipv4SetOps.size,
      contains: ipv4SetOps.contains,
      onSettled: (w) => this.settled(w),
      ...(this.deps.now ? { now: this.deps.now } : {}),
    });
  }

  private settled(w: EnforcerWorker): void {
    void sendFeedback(
      { ...this.deps, threshold: () => this.deps.policy().threshold, protectedCount: () => this.protectedCount, reconcileSeconds: () => this.deps.options().reconcileSeconds },
      w,
    );
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
      const gc = this.deps.gc ?? (globalThis as { gc?: () => void }).gc;
      if (gc) setImmediate(gc);
    }
  }

  /** Resolves when every enforcer has finished what it was handed (tests, graceful stop). */
  async idle(): Promise<void> {
    await Promise.all(this.deps.enforcers().map((w) => w.idle()));
  }

  private now(): number {
    return Math.floor((this.deps.now?.() ?? Date.now()) / 1000);
  }

  async restore(): Promise<void> {
    const saved = await this.deps.feedState.load();
    if (!saved) return;
    this.deps.state.table = saved.table;
    this.deps.state.listedAt = saved.listedAt;
    this.cursor = saved.cursor;
    this.deps.log.info({ cursor: saved.cursor, indicators: saved.table.size }, 'feed state restored');
  }

  /** Serialises sync operations; errors are logged by the caller's `run`. */
  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task, task);
    this.chain = run.catch(() => undefined);
    return run;
  }

  incremental(): Promise<void> {
    return this.exclusive(async () => {
      await this.pullFeed();
      await this.enforce('incremental');
    });
  }

  full(force = false): Promise<void> {
    return this.exclusive(async () => {
      await this.pullList(force);
      await this.pullFeed();
      for (const w of this.deps.enforcers()) w.requireReplace();
      await this.enforce('full', force);
    });
  }

  /** A decision pushed over the sync channel: applied now, without waiting for the feed. */
  decision(ip: string, decision: -1 | 0 | 1, ttl: number | null, version?: number): Promise<void> {
    return this.exclusive(async () => {
      if (this.deps.state.applyDecision(ip, decision, ttl, this.now(), version)) this.dirty = true;
      await this.enforce('decision');
    });
  }

  /**
   * The short reconcile loop: every enforcer reads its target back on its own queue and
   * re-asserts what it last placed when someone else changed it (see `EnforcerWorker.reconcile`).
   * An enforcer whose last call failed gets the whole set again from the local state, without
   * asking the server. Resolves with the drifts repaired; a stalled enforcer is skipped (its
   * pending call re-asserts the set), so it holds up no other.
   */
  async reconcile(): Promise<number> {
    // Before the first evaluation there is no set to re-assert (an empty one would withdraw).
    if (this.withdrawn || this.lastSyncAt === 0) return 0;
    const workers = this.deps.enforcers();
    const retry = (w: EnforcerWorker) => {
      if (w.needsReplace && !w.busy && !this.withdrawn) void w.submit(this.deps.state.enforced);
    };
    for (const w of workers) retry(w);
    const drifts = await Promise.all(
      workers.map(async (w) => {
        const drifted = await w.reconcile();
        // A failed read-back leaves the target unknown: replace it now.
        retry(w);
        return drifted === true ? 1 : 0;
      }),
    );
    return drifts.reduce<number>((a, b) => a + b, 0);
  }

  /** Runs `task` between sync operations: enforcers may be swapped there (see EnforcerSlots). */
  between<T>(task: () => Promise<T>): Promise<T> {
    return this.exclusive(task);
  }

  /**
   * `running = no` without touching the enforcers (the caller withdraws them): nothing is
   * synced or enforced until `resume`. Call inside `between`.
   */
  pause(): void {
    this.withdrawn = true;
    clearTimeout(this.decayTimer);
    this.deps.state.enforced = { keys: new Float64Array(0), ranks: new Uint16Array(0) };
    this.deps.metrics.setSize.set(0);
  }

  /** `running = no`: every enforcer withdraws what it placed; nothing is enforced until `resume`. */
  withdraw(): Promise<void> {
    return this.exclusive(async () => {
      this.pause();
      await Promise.all(this.deps.enforcers().map((w) => w.withdraw().catch(() => undefined)));
    });
  }

  resume(): void {
    this.withdrawn = false;
    for (const w of this.deps.enforcers()) w.requireReplace();
  }

  get isWithdrawn(): boolean {
    return this.withdrawn;
  }

  async stop(): Promise<void> {
    clearTimeout(this.decayTimer);
    await this.exclusive(async () => this.save(true));
  }

  private async pullFeed(): Promise<void> {
    const { client, state, options } = this.deps;
    const feed = client.ipsFeed(this.cursor, { page_size: options().pageSize });
    for (;;) {
      const step = await feed.next();
      if (step.done) break;
      for (const record of step.value.body) {
        state.ingestRecord({ ip: record.ip, score: record.score, ts: record.ts, decision: record.decision ?? -1, ttl: record.ttl });
      }
      this.cursor = step.value.header.next_ts ?? step.value.body.at(-1)!.ts;
      this.dirty = true;
    }
    this.deps.metrics.tableSize.set(state.table.size);
  }

  private async pullList(force: boolean): Promise<void> {
    const { client, state, policy, gaid, log } = this.deps;
    const threshold = Math.min(1000, Math.max(1, policy().threshold));
    const keys: number[] = [];
    const plugin = this.deps.enforcers()[0]?.label;
    const g = gaid();
    // The whole list is read before anything changes: a failed page leaves the state untouched.
    for await (const page of client.ipv4List(threshold, { ...(g ? { agid: g } : {}), ...(plugin ? { plugin } : {}) })) {
      for (const item of page.items) {
        const key = ipv4Key(item);
        if (key >= 0) keys.push(key);
      }
    }
    if (keys.length === 0 && state.enforced.keys.length > 0 && !(force || this.deps.options().forceSync)) {
      log.warn({ enforced: state.enforced.keys.length }, 'server list came back empty; reconcile refused');
      this.deps.metrics.syncs.inc({ kind: 'full', outcome: 'refused' });
      throw new SyncRefusedError('empty_list', { enforced: state.enforced.keys.length });
    }
    state.applyServerList(keys, this.now());
    this.dirty = true;
  }

  private async enforce(kind: SyncKind, force = false): Promise<void> {
    const { state, policy, log, metrics } = this.deps;
    if (this.withdrawn) return;
    const now = this.now();
    const p = policy();
    const next = state.evaluate(now, p);
    const opts = this.deps.options();
    const previous = state.enforced.keys.length;
    // Counted first, built only if needed: at a million entries the diff and the full list are
    // ~80 MB each, and a first sync needs only the full list.
    const removals = countRemovals(state.enforced, next);
    const additions = next.keys.length - (previous - removals);
    if (!removalAllowed(previous, removals, force, opts)) {
      log.warn({ kind, previous, remove: removals, add: additions }, 'sync would remove too much of the block set; refused');
      metrics.syncs.inc({ kind, outcome: 'refused' });
      this.scheduleDecay(now, p);
      throw new SyncRefusedError('mass_removal', { previous, remove: removals });
    }
    if (additions + removals > 10_000 || (next.keys.length > 10_000 && this.deps.enforcers().some((w) => w.needsReplace))) this.largeChange = true;
    state.enforced = next;
    this.protectedCount = next.protectedCount;
    // Every enforcer converges on the new set on its own queue; nothing here waits for them.
    for (const w of this.deps.enforcers()) void w.submit(next);
    this.lastSyncAt = now;
    metrics.setSize.set(next.keys.length);
    metrics.lastSync.set(now);
    metrics.syncs.inc({ kind, outcome: 'ok' });
    if (additions || removals) log.info({ kind, add: additions, remove: removals, enforced: next.keys.length, cut: next.cut }, 'block set changed');
    this.scheduleDecay(now, p);
    await this.save(false);
  }

  private scheduleDecay(now: number, policy: BlockPolicy): void {
    clearTimeout(this.decayTimer);
    const at = this.deps.state.nextChange(now, policy);
    if (!Number.isFinite(at)) return;
    const { min, max } = this.deps.options().decayTimerMs ?? { min: 1000, max: 3_600_000 };
    const delay = Math.min(max, Math.max(min, (at - now) * 1000 + 500));
    this.decayTimer = setTimeout(() => {
      this.exclusive(() => this.enforce('decay')).catch((err: unknown) => this.deps.log.warn({ err }, 'decay re-evaluation failed'));
    }, delay);
    this.decayTimer.unref();
  }

  private async save(always: boolean): Promise<void> {
    const every = this.deps.options().saveEveryMs ?? 60_000;
    if (!this.dirty || (!always && Date.now() - this.lastSave < every)) return;
    await this.deps.feedState.save({ cursor: this.cursor, listedAt: this.deps.state.listedAt, table: this.deps.state.table });
    this.lastSave = Date.now();
    this.dirty = false;
  }
}
