import type { TsPage } from '@rampart/client';
import type { Enforcer, PluginLogger } from '@rampart/plugin-kit';
import type { AgentMetrics } from '../runtime/metrics.ts';
import type { BlockPolicy } from './block-state.ts';
import { EnforcerWorker, type EnforcerWorkerDeps } from './enforcer-worker.ts';

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

/** The part of a kind's block state the syncer drives (BlockState, NamedBlockState). */
export interface KindState<S, L, E extends S & { cut: number } = S & { cut: number }> {
  enforced: S;
  listedAt: number;
  evaluate(now: number, policy: BlockPolicy): E;
  nextChange(now: number, policy: BlockPolicy): number;
  applyServerList(list: L, now: number): number;
  applyDecision(indicator: string, decision: -1 | 0 | 1, ttl: number | null, now: number, version?: number): boolean;
}

/** The worker set operations, and what runs after each of its calls settled. */
export type WorkerSetOps<S> = Pick<EnforcerWorkerDeps<S>, 'entries' | 'diff' | 'size' | 'contains' | 'onSettled'>;

/**
 * Everything in which one indicator kind's sync differs from another's: the set it enforces,
 * where its feed and its list come from, how it is saved, what it logs and counts. `S` is the
 * block set, `L` the server list as the state takes it, `R` one feed record, `E` an evaluation.
 */
export interface KindCodec<S, L, R extends { ts: number }, E extends S & { cut: number } = S & { cut: number }> {
  /** Log fields naming the kind and, when given, the sync operation. */
  tag(sync?: SyncKind): Record<string, string>;
  size(set: S): number;
  /** The set of `running = no`. */
  empty(): S;
  countRemovals(from: S, to: S): number;
  workerOps(): WorkerSetOps<S>;
  /** Called with each new enforcer instance before its worker exists. */
  prepare?(enforcer: Enforcer): void;
  /** The feed from `cursor`, each record ingested into the state, and the known count reported after. */
  feed(cursor: number): AsyncGenerator<TsPage<R>, number>;
  ingest(record: R): void;
  fed(): void;
  /** The whole server list (read before anything changes) and how many entries it holds. */
  list(): Promise<L>;
  listSize(list: L): number;
  /** After an evaluation became the enforced set, before the enforcers are handed it. */
  adopted(next: E, additions: number, removals: number): void;
  /** Metrics: the enforced set's size, a sync's outcome, and a sync done at `now`. */
  setSize(size: number): void;
  counted(sync: SyncKind, outcome: 'ok' | 'refused'): void;
  synced(now: number): void;
  /** The saved feed state, put into the block state: cursor, list time, and the records restored. */
  load(): Promise<{ cursor: number; listedAt: number; indicators: number } | undefined>;
  save(cursor: number, listedAt: number): Promise<void>;
}

export interface KindSyncerDeps<S, L, E extends S & { cut: number } = S & { cut: number }> {
  state: KindState<S, L, E>;
  enforcers: () => EnforcerWorker<S>[];
  policy: () => BlockPolicy;
  log: PluginLogger;
  metrics: AgentMetrics;
  options: () => SyncerOptions;
  now?: () => number;
}

/**
 * Keeps the enforcers of one indicator kind in line with the server: pulls the kind's feed from
 * the saved cursor, reconciles with the kind's list, evaluates the block state and hands each
 * enforcer's worker the new set. One operation at a time here; the enforcers apply
 * independently (each worker its own queue, timeout and failure state), so one stalled target
 * delays no other and no sync. A decision or feed change pushed over the sync channel is applied
 * at once; a decay timer re-runs the evaluation when the next entry drops below the threshold,
 * without asking the server; the mass-removal and empty-list guards hold for every kind. What
 * differs between kinds is the codec's.
 */
export class KindSyncer<S, L, R extends { ts: number }, E extends S & { cut: number } = S & { cut: number }> {
  cursor = 0;
  lastSyncAt = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private decayTimer: NodeJS.Timeout | undefined;
  private lastSave = 0;
  private dirty = false;
  private withdrawn = false;

  constructor(
    private readonly core: KindSyncerDeps<S, L, E>,
    private readonly codec: KindCodec<S, L, R, E>,
  ) {}

  /** A worker for an enforcer instance (EnforcerSlots creates one per slot). */
  worker(label: string, enforcer: Enforcer): EnforcerWorker<S> {
    this.codec.prepare?.(enforcer);
    return new EnforcerWorker<S>(label, enforcer, {
      log: this.core.log,
      metrics: this.core.metrics,
      timeoutMs: () => this.core.options().enforcerTimeoutMs ?? 120_000,
      ...this.codec.workerOps(),
      ...(this.core.now ? { now: this.core.now } : {}),
    });
  }

  /** Resolves when the operation under way is done and every enforcer has finished what it was handed (tests, graceful stop). */
  async idle(): Promise<void> {
    await this.chain;
    await Promise.all(this.core.enforcers().map((w) => w.idle()));
  }

  protected now(): number {
    return Math.floor((this.core.now?.() ?? Date.now()) / 1000);
  }

  async restore(): Promise<void> {
    const saved = await this.codec.load();
    if (!saved) return;
    this.core.state.listedAt = saved.listedAt;
    this.cursor = saved.cursor;
    this.core.log.info({ ...this.codec.tag(), cursor: saved.cursor, indicators: saved.indicators }, 'feed state restored');
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
      for (const w of this.core.enforcers()) w.requireReplace();
      await this.enforce('full', force);
    });
  }

  /** A decision pushed over the sync channel: applied now, without waiting for the feed. */
  decision(indicator: string, decision: -1 | 0 | 1, ttl: number | null, version?: number): Promise<void> {
    return this.exclusive(async () => {
      if (this.core.state.applyDecision(indicator, decision, ttl, this.now(), version)) this.dirty = true;
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
    const workers = this.core.enforcers();
    const retry = (w: EnforcerWorker<S>) => {
      if (w.needsReplace && !w.busy && !this.withdrawn) void w.submit(this.core.state.enforced);
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
    this.core.state.enforced = this.codec.empty();
    this.codec.setSize(0);
  }

  /** `running = no`: every enforcer withdraws what it placed; nothing is enforced until `resume`. */
  withdraw(): Promise<void> {
    return this.exclusive(async () => {
      this.pause();
      await Promise.all(this.core.enforcers().map((w) => w.withdraw().catch(() => undefined)));
    });
  }

  resume(): void {
    this.withdrawn = false;
    for (const w of this.core.enforcers()) w.requireReplace();
  }

  get isWithdrawn(): boolean {
    return this.withdrawn;
  }

  async stop(): Promise<void> {
    clearTimeout(this.decayTimer);
    await this.exclusive(async () => this.save(true));
  }

  private async pullFeed(): Promise<void> {
    const feed = this.codec.feed(this.cursor);
    for (;;) {
      const step = await feed.next();
      if (step.done) break;
      for (const record of step.value.body) this.codec.ingest(record);
      this.cursor = step.value.header.next_ts ?? step.value.body.at(-1)!.ts;
      this.dirty = true;
    }
    this.codec.fed();
  }

  private async pullList(force: boolean): Promise<void> {
    const { state, log } = this.core;
    // The whole list is read before anything changes: a failed page leaves the state untouched.
    const list = await this.codec.list();
    const enforced = this.codec.size(state.enforced);
    if (this.codec.listSize(list) === 0 && enforced > 0 && !(force || this.core.options().forceSync)) {
      log.warn({ ...this.codec.tag(), enforced }, 'server list came back empty; reconcile refused');
      this.codec.counted('full', 'refused');
      throw new SyncRefusedError('empty_list', { enforced });
    }
    state.applyServerList(list, this.now());
    this.dirty = true;
  }

  private async enforce(sync: SyncKind, force = false): Promise<void> {
    const { state, policy, log } = this.core;
    if (this.withdrawn) return;
    const now = this.now();
    const p = policy();
    const next = state.evaluate(now, p);
    const previous = this.codec.size(state.enforced);
    // Counted first, built only if needed: at a million entries the diff and the full list are
    // ~80 MB each, and a first sync needs only the full list.
    const removals = this.codec.countRemovals(state.enforced, next);
    const size = this.codec.size(next);
    const additions = size - (previous - removals);
    if (!removalAllowed(previous, removals, force, this.core.options())) {
      log.warn({ ...this.codec.tag(sync), previous, remove: removals, add: additions }, 'sync would remove too much of the block set; refused');
      this.codec.counted(sync, 'refused');
      this.scheduleDecay(now, p);
      throw new SyncRefusedError('mass_removal', { previous, remove: removals });
    }
    state.enforced = next;
    this.codec.adopted(next, additions, removals);
    // Every enforcer converges on the new set on its own queue; nothing here waits for them.
    for (const w of this.core.enforcers()) void w.submit(next);
    this.lastSyncAt = now;
    this.codec.setSize(size);
    this.codec.synced(now);
    this.codec.counted(sync, 'ok');
    if (additions || removals) log.info({ ...this.codec.tag(sync), add: additions, remove: removals, enforced: size, cut: next.cut }, 'block set changed');
    this.scheduleDecay(now, p);
    await this.save(false);
  }

  private scheduleDecay(now: number, policy: BlockPolicy): void {
    clearTimeout(this.decayTimer);
    const at = this.core.state.nextChange(now, policy);
    if (!Number.isFinite(at)) return;
    const { min, max } = this.core.options().decayTimerMs ?? { min: 1000, max: 3_600_000 };
    const delay = Math.min(max, Math.max(min, (at - now) * 1000 + 500));
    this.decayTimer = setTimeout(() => {
      this.exclusive(() => this.enforce('decay')).catch((err: unknown) => this.core.log.warn({ err, ...this.codec.tag() }, 'decay re-evaluation failed'));
    }, delay);
    this.decayTimer.unref();
  }

  private async save(always: boolean): Promise<void> {
    const every = this.core.options().saveEveryMs ?? 60_000;
    if (!this.dirty || (!always && Date.now() - this.lastSave < every)) return;
    await this.codec.save(this.cursor, this.core.state.listedAt);
    this.lastSave = Date.now();
    this.dirty = false;
  }
}
