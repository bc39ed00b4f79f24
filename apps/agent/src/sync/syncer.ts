import { hostname } from 'node:os';
import type { RampartClient } from '@rampart/client';
import type { Enforcer, PluginLogger } from '@rampart/plugin-kit';
import type { AgentMetrics } from '../runtime/metrics.ts';
import { BlockState, countRemovals, diffKeySets, toEntries, type BlockPolicy, type KeySet } from './block-state.ts';
import type { BlockEntry, Diff, EnforceResult } from '@rampart/plugin-kit';
import { ipv4Key } from '@rampart/contracts';
import type { FeedStateFile } from './feed-state.ts';

export interface ActiveEnforcer {
  label: string;
  enforcer: Enforcer;
  /** Needs a full `sync` (first run, after a failure, after a reconcile). */
  needsReplace: boolean;
  /** What the enforcer reported after its last successful call (its capacity may cut the set). */
  enforced?: number;
  cut?: number;
}

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
}

export interface SyncerDeps {
  client: RampartClient;
  state: BlockState;
  feedState: FeedStateFile;
  enforcers: () => ActiveEnforcer[];
  policy: () => BlockPolicy;
  gaid: () => string | undefined;
  log: PluginLogger;
  metrics: AgentMetrics;
  options: () => SyncerOptions;
  now?: () => number;
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
 * Keeps the enforcers in line with the server: pulls the /ips feed from the saved cursor,
 * reconciles with the /ipv4 list, evaluates the block state and hands each enforcer the diff
 * (or the whole set when it must be replaced). One operation at a time; a decay timer re-runs
 * the evaluation when the next entry drops below the threshold, without asking the server.
 */
export class Syncer {
  cursor = 0;
  lastSyncAt = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private decayTimer: NodeJS.Timeout | undefined;
  private lastSave = 0;
  private dirty = false;
  private withdrawn = false;

  constructor(private readonly deps: SyncerDeps) {}

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
      for (const e of this.deps.enforcers()) e.needsReplace = true;
      await this.enforce('full', force);
    });
  }

  /** A decision pushed over the sync channel: applied now, without waiting for the feed. */
  decision(ip: string, decision: -1 | 0 | 1, ttl: number | null): Promise<void> {
    return this.exclusive(async () => {
      if (this.deps.state.applyDecision(ip, decision, ttl, this.now())) this.dirty = true;
      await this.enforce('decision');
    });
  }

  /**
   * The short reconcile loop: every enforcer reads its target back and re-asserts the last set
   * when someone else changed it (`reconcile()`, or for an enforcer without one, `list()` compared
   * with the enforced set and a `sync`). An enforcer whose last call failed gets the whole set
   * again from the local state, without asking the server. Resolves with the drifts repaired.
   */
  reconcile(): Promise<number> {
    return this.exclusive(async () => {
      // Before the first evaluation there is no set to re-assert (an empty one would withdraw).
      if (this.withdrawn || this.lastSyncAt === 0) return 0;
      const { log, metrics } = this.deps;
      let repaired = 0;
      let replace = false;
      for (const e of this.deps.enforcers()) {
        if (e.needsReplace) {
          replace = true;
          continue;
        }
        try {
          let drifted: boolean;
          if (e.enforcer.reconcile) {
            const result = await e.enforcer.reconcile();
            this.record(e, result);
            drifted = result.drifted;
          } else drifted = await this.reassertFromList(e);
          metrics.reconciles.inc({ enforcer: e.label, outcome: drifted ? 'drift_repaired' : 'ok' });
          if (drifted) {
            repaired++;
            metrics.driftsRepaired.inc({ enforcer: e.label });
            log.warn({ enforcer: e.label, enforced: this.deps.state.enforced.keys.length }, 'enforcer target changed by someone else; re-asserted');
          }
        } catch (err) {
          replace = true;
          e.needsReplace = true;
          metrics.reconciles.inc({ enforcer: e.label, outcome: 'error' });
          metrics.enforcerErrors.inc({ enforcer: e.label });
          log.error({ err, enforcer: e.label }, 'reconcile failed; replacing the enforcer set');
        }
      }
      if (replace) await this.enforce('reconcile');
      return repaired;
    });
  }

  /**
   * For enforcers without `reconcile()`: what the target holds must be in the enforced set and,
   * up to the enforcer's capacity (it keeps the highest scores), all of it; else `sync` again.
   */
  private async reassertFromList(e: ActiveEnforcer): Promise<boolean> {
    const { keys } = this.deps.state.enforced;
    const live = await e.enforcer.list();
    const expected = Math.min(keys.length, e.enforcer.capacity);
    const drifted = live.length !== expected || live.some((cidr) => !hasKey(keys, ipv4Key(cidr)));
    if (drifted) this.record(e, await e.enforcer.sync(toEntries(this.deps.state.enforced)));
    return drifted;
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
      this.withdrawn = true;
      clearTimeout(this.decayTimer);
      for (const e of this.deps.enforcers()) {
        try {
          await e.enforcer.withdraw();
          e.needsReplace = true;
          this.record(e, { enforced: 0, cut: 0 });
        } catch (err) {
          this.deps.metrics.enforcerErrors.inc({ enforcer: e.label });
          this.deps.log.error({ err, enforcer: e.label }, 'withdraw failed');
        }
      }
      this.deps.state.enforced = { keys: new Float64Array(0), ranks: new Uint16Array(0) };
      this.deps.metrics.setSize.set(0);
    });
  }

  resume(): void {
    this.withdrawn = false;
    for (const e of this.deps.enforcers()) e.needsReplace = true;
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
    const allowed = force || opts.forceSync || removals < opts.minGuardedRemovals || removals <= previous * opts.maxRemovalFraction;
    if (!allowed) {
      log.warn({ kind, previous, remove: removals, add: additions }, 'sync would remove too much of the block set; refused');
      metrics.syncs.inc({ kind, outcome: 'refused' });
      this.scheduleDecay(now, p);
      throw new SyncRefusedError('mass_removal', { previous, remove: removals });
    }
    let failed = false;
    let replaced = 0;
    let full: BlockEntry[] | undefined;
    let diff: Diff | undefined;
    for (const e of this.deps.enforcers()) {
      try {
        if (e.needsReplace) {
          full ??= toEntries(next);
          this.record(e, await e.enforcer.sync(full));
          replaced += full.length;
        } else if (removals > 0 || additions > 0) {
          diff ??= diffKeySets(state.enforced, next);
          this.record(e, await e.enforcer.apply(diff));
        }
        e.needsReplace = false;
      } catch (err) {
        failed = true;
        e.needsReplace = true;
        metrics.enforcerErrors.inc({ enforcer: e.label });
        log.error({ err, enforcer: e.label, kind }, 'enforcer failed; it will be replaced at the next sync');
      }
    }
    full = undefined;
    diff = undefined;
    state.enforced = next;
    this.lastSyncAt = now;
    metrics.setSize.set(next.keys.length);
    metrics.lastSync.set(now);
    metrics.syncs.inc({ kind, outcome: failed ? 'enforcer_error' : 'ok' });
    if (additions || removals) log.info({ kind, add: additions, remove: removals, enforced: next.keys.length, cut: next.cut }, 'block set changed');
    this.scheduleDecay(now, p);
    await this.save(false);
    void this.feedback(next);
    // A replace of a large set leaves ~100 bytes of garbage per entry (the BlockEntry array the
    // enforcers take). An idle daemon allocates too little to trigger a collection, so it would
    // carry that garbage until the next burst; the packaged agent runs with --expose-gc for this.
    if (replaced + additions + removals > 10_000) (globalThis as { gc?: () => void }).gc?.();
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

  /** Keeps what an enforcer says it enforces, for feedback, /healthz, the sync channel and metrics. */
  private record(e: ActiveEnforcer, result: EnforceResult): void {
    e.enforced = result.enforced;
    e.cut = result.cut;
    this.deps.metrics.enforcerEntries.set({ enforcer: e.label }, result.enforced);
    this.deps.metrics.enforcerCut.set({ enforcer: e.label }, result.cut);
  }

  /** `POST /agents/feedback` per enforcer: what it enforces now (also the agent's check-in). */
  private async feedback(set: KeySet): Promise<void> {
    const agid = this.deps.gaid();
    if (!agid) return;
    for (const e of this.deps.enforcers()) {
      try {
        await this.deps.client.agentFeedback(
          { agid, plugin: e.label, hostname: hostname(), code: e.needsReplace ? 'error' : 0, score_threshold: this.deps.policy().threshold, blacklist: e.enforced ?? set.keys.length },
          { retries: 1 },
        );
      } catch (err) {
        this.deps.log.debug({ err, enforcer: e.label }, 'feedback not sent');
      }
    }
  }
}

/** Binary search in a sorted key array. */
function hasKey(keys: Float64Array, key: number): boolean {
  if (key < 0) return false;
  let lo = 0;
  let hi = keys.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const k = keys[mid]!;
    if (k === key) return true;
    if (k < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}
