import { createHash } from 'node:crypto';
import { abortable, type BlockEntry, type Diff, type EnforceResult, type Enforcer, type EnforcerHealth, type PluginLogger } from '@rampart/plugin-kit';
import type { AgentMetrics } from '../runtime/metrics.ts';
import type { KeySet } from './block-state.ts';

/**
 * What one enforcer is doing, as /healthz, `rampart-agent status`, metrics and feedback report it:
 * - `ok`: its target holds the last block set handed to it and its healthcheck passes;
 * - `degraded`: it enforces, but its healthcheck fails, or it has not yet received the set;
 * - `failed`: its last call failed or timed out (the target is unknown until the next replace
 *   succeeds), or it has no instance at all (no plugin for the label, `create()` failing).
 */
export type EnforcerState = 'ok' | 'degraded' | 'failed';

/**
 * `S` is the block set of one indicator kind as its syncer keeps it (IPv4: `KeySet`, sorted typed
 * arrays; other kinds: `NamedSet`); the worker sees it only through these functions.
 */
export interface EnforcerWorkerDeps<S = KeySet> {
  log: PluginLogger;
  metrics: AgentMetrics;
  /** Longest one call of this enforcer may run before it is aborted (re-read per call). */
  timeoutMs(): number;
  /** The whole set as entries, and the change between two sets (memoised by the syncer). */
  entries(set: S): BlockEntry[];
  diff(from: S, to: S): Diff;
  /** Entries in the set, and whether it holds a value `list()` read back. */
  size(set: S): number;
  contains(set: S, value: string): boolean;
  /** After every apply or replace, successful or not (feedback to the control plane). */
  onSettled?(worker: EnforcerWorker<S>): void;
  now?: () => number;
}

export class EnforcerTimeoutError extends Error {
  readonly code = 'ENFORCER_TIMEOUT';
  constructor(
    readonly label: string,
    readonly operation: string,
    readonly timeoutMs: number,
  ) {
    super(`${operation} of enforcer '${label}' did not finish within ${timeoutMs} ms; aborted`);
    this.name = 'EnforcerTimeoutError';
  }
}

/** Aborts what a worker runs because the slot is withdrawn, replaced or the agent stops. */
export class EnforcerCancelledError extends Error {
  readonly code = 'ENFORCER_CANCELLED';
  constructor(readonly label: string, why: string) {
    super(`enforcer '${label}': call cancelled (${why})`);
    this.name = 'EnforcerCancelledError';
  }
}

/** One read-back of the target against what this enforcer should hold. */
export interface Attestation {
  /** Entries read back, and SHA-256 of them in `list()` order (sorted), each followed by a line feed. */
  held: number;
  digest: string;
  /** What it should hold: the set handed over, capped at the enforcer's capacity. */
  expected: number;
  /** The read-back holds a value outside the set, or fewer or more than expected. */
  differs: boolean;
  at: number;
}

/** SHA-256 of the members, one per line: equal sets read back in the same (sorted) order give equal digests. */
export function membersDigest(members: readonly string[]): string {
  const hash = createHash('sha256');
  for (const m of members) hash.update(`${m}\n`);
  return hash.digest('hex');
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err)).slice(0, 300);

/**
 * One enforcer's own queue. The syncer hands every enforcer the latest block set and moves on;
 * each worker converges its target on that set at its own pace, one call at a time, each call
 * with its own timeout and an `AbortSignal`. A stalled target (a reload command that hangs, a
 * bulk API operation of minutes) therefore delays nothing but itself, and while it runs, newer
 * sets coalesce: when it ends, the worker applies the difference from what it last placed to the
 * latest set (or replaces it whole when the call failed, as the target is then unknown).
 */
export class EnforcerWorker<S = KeySet> {
  /** Reported by the last successful call. */
  enforced = 0;
  cut = 0;
  state: EnforcerState = 'degraded';
  /** Why the last call failed (cleared by the next success). */
  lastError: string | undefined;
  lastErrorAt: number | undefined;
  /** Failed calls in a row. */
  failures = 0;
  health: (EnforcerHealth & { at: number }) | undefined;
  /** When the last call (apply or replace) succeeded, epoch seconds. */
  lastAppliedAt: number | undefined;
  /**
   * What the target held at the last read-back (after each apply or replace, and at each
   * reconcile): read from it with `list()`, not remembered; undefined before the first one.
   */
  attested: Attestation | undefined;

  /** What the target holds per the last successful call; null when unknown (replace next). */
  private applied: S | null = null;
  /** The latest set handed over. */
  private target: S | null = null;
  /** Bumped by `requireReplace`; a call that started before keeps `applied` unknown. */
  private replaceGeneration = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private queued: Promise<void> | undefined;
  private running: { operation: string; controller: AbortController; since: number } | undefined;
  /** Aborted when the worker is retired (slot closed) or the agent stops. */
  private readonly lifetime = new AbortController();

  constructor(
    readonly label: string,
    readonly enforcer: Enforcer,
    private readonly deps: EnforcerWorkerDeps<S>,
  ) {}

  private now(): number {
    return Math.floor((this.deps.now?.() ?? Date.now()) / 1000);
  }

  /** True until the target has received a whole set since it was created, failed or was withdrawn. */
  get needsReplace(): boolean {
    return this.applied === null;
  }

  /** The operation running now and for how long (seconds), for /healthz. */
  get busy(): { operation: string; seconds: number } | undefined {
    return this.running && { operation: this.running.operation, seconds: Math.max(0, this.now() - this.running.since) };
  }

  /** A call is running or queued. */
  get pending(): boolean {
    return this.running !== undefined || this.queued !== undefined;
  }

  get retired(): boolean {
    return this.lifetime.signal.aborted;
  }

  /** The next call replaces the target whole (a full reconcile, `running = yes` again). */
  requireReplace(): void {
    this.applied = null;
    this.replaceGeneration += 1;
  }

  /**
   * Hands over the latest set. Resolves when this enforcer has converged on it (or on a later
   * one) or the attempt failed; never rejects. Callers need not wait: the syncer does not.
   */
  submit(target: S): Promise<void> {
    this.target = target;
    if (this.queued) return this.queued;
    const turn = this.enqueue(async () => {
      this.queued = undefined;
      await this.converge();
    });
    this.queued = turn;
    return turn;
  }

  private async converge(): Promise<void> {
    const target = this.target;
    if (!target || this.retired) return;
    const applied = this.applied;
    if (applied === target) return;
    const generation = this.replaceGeneration;
    let result: EnforceResult | undefined;
    try {
      if (applied === null) {
        const entries = this.deps.entries(target);
        result = await this.call('sync', (signal) => this.enforcer.sync(entries, signal));
      } else {
        const diff = this.deps.diff(applied, target);
        if (diff.add.length > 0 || diff.remove.length > 0) result = await this.call('apply', (signal) => this.enforcer.apply(diff, signal));
      }
    } catch {
      this.applied = null;
      this.deps.onSettled?.(this);
      return;
    }
    if (generation === this.replaceGeneration) this.applied = target;
    if (result) this.record(result);
    this.lastAppliedAt = this.now();
    if (result) await this.readBackQuietly(target);
    this.deps.onSettled?.(this);
  }

  /**
   * Reads the target back and records what it holds against `set` (see `attested`). A read-back
   * that fails is a failed call like any other (the reconcile then replaces the target).
   */
  private async readBack(set: S): Promise<void> {
    this.attest(set, await this.call('list', (signal) => this.enforcer.list(signal)));
  }

  /**
   * The read-back after an apply or replace that succeeded: one that fails leaves the call a
   * success and nothing attested (the next reconcile reads again, and counts a failure there).
   */
  private async readBackQuietly(set: S): Promise<void> {
    try {
      this.attest(set, await this.withTimeout('list', (signal) => this.enforcer.list(signal)));
    } catch (err) {
      this.attested = undefined;
      this.deps.log.debug({ err, enforcer: this.label }, 'read-back after apply failed');
    }
  }

  private attest(set: S, live: string[]): void {
    const expected = Math.min(this.deps.size(set), this.enforcer.capacity);
    const differs = live.length !== expected || live.some((value) => !this.deps.contains(set, value));
    this.attested = { held: live.length, digest: membersDigest(live), expected, differs, at: this.now() };
    this.updateState();
  }

  /**
   * The short loop's read-back: the target is read and, when someone else changed it (a firewall
   * reload, a flush, a deleted file), what this enforcer last placed is re-asserted with a full
   * replace (`reconcile()`, or for an enforcer without one, `list()` compared with that set up
   * to the capacity, then `sync`). Resolves with whether it drifted; undefined when skipped (a
   * call is running or queued, or the target awaits a replace, which re-asserts it anyway) or
   * when the read-back failed (the target is then replaced at the next sync).
   */
  reconcile(): Promise<boolean | undefined> {
    if (this.running || this.queued || this.applied === null || this.retired) return Promise.resolve(undefined);
    return this.enqueue(async () => {
      const applied = this.applied;
      if (applied === null) return undefined;
      const { log, metrics } = this.deps;
      try {
        // What the target holds before anything is re-asserted: a difference is reported (the
        // control plane sees it, /healthz is degraded) until a read-back after the repair agrees.
        await this.readBack(applied);
        let drifted = this.attested!.differs;
        if (drifted) this.deps.onSettled?.(this);
        if (this.enforcer.reconcile) {
          const result = await this.call('reconcile', (signal) => this.enforcer.reconcile!(signal));
          this.record(result);
          if (result.drifted || drifted) await this.readBack(applied);
          drifted ||= result.drifted;
        }
        // Still not the set (or no reconcile of its own): replaced whole, then read back again.
        if (this.attested!.differs) {
          drifted = true;
          const entries = this.deps.entries(applied);
          this.record(await this.call('sync', (signal) => this.enforcer.sync(entries, signal)));
          await this.readBack(applied);
        }
        this.deps.onSettled?.(this);
        metrics.reconciles.inc({ enforcer: this.label, outcome: drifted ? 'drift_repaired' : 'ok' });
        if (drifted) {
          metrics.driftsRepaired.inc({ enforcer: this.label });
          log.warn({ enforcer: this.label, enforced: this.enforced }, 'enforcer target changed by someone else; re-asserted');
        }
        return drifted;
      } catch {
        this.applied = null;
        metrics.reconciles.inc({ enforcer: this.label, outcome: 'error' });
        return undefined;
      }
    });
  }

  /** Runs the enforcer's healthcheck on this worker's queue (bounded by the timeout). */
  async checkHealth(): Promise<EnforcerHealth> {
    if (this.retired) return this.health ?? { ok: false, detail: 'retired' };
    // A call in progress is its own probe: a healthcheck would only wait behind it.
    if (this.running) return this.health ?? { ok: true };
    return this.enqueue(async () => {
      let health: EnforcerHealth;
      try {
        health = await this.withTimeout('healthcheck', (signal) => this.enforcer.healthcheck(signal));
      } catch (err) {
        health = { ok: false, detail: errorText(err) };
      }
      this.health = { ...health, at: this.now() };
      this.updateState();
      return health;
    });
  }

  /**
   * Removes every rule this enforcer placed. A call in progress is aborted first: its set is
   * about to be withdrawn anyway. Rejects when the withdraw itself fails.
   */
  async withdraw(): Promise<void> {
    // Nothing queued re-places the set first; the next `submit` (running = yes) hands it over.
    this.target = null;
    this.running?.controller.abort(new EnforcerCancelledError(this.label, 'withdrawn'));
    await this.enqueue(async () => {
      try {
        await this.call('withdraw', (signal) => this.enforcer.withdraw(signal));
      } finally {
        this.applied = null;
        this.attested = undefined;
        this.replaceGeneration += 1;
      }
      this.record({ enforced: 0, cut: 0 });
    });
  }

  /**
   * Retires the worker: a call in progress is aborted, nothing queued runs, and the instance is
   * closed once the aborted call has ended (at most `graceMs` later). Rules stay in place.
   */
  async close(graceMs = 5_000): Promise<void> {
    this.abort(new EnforcerCancelledError(this.label, 'closed'));
    const ended = await settledWithin(this.queue, graceMs);
    if (!ended) this.deps.log.warn({ enforcer: this.label, grace_ms: graceMs }, 'enforcer call did not end after abort; closing anyway');
    const signal = AbortSignal.timeout(graceMs);
    await this.enforcer.close(signal).catch((err: unknown) => this.deps.log.warn({ err, enforcer: this.label }, 'enforcer did not close cleanly'));
  }

  /** Aborts the call in progress and refuses further work (the agent stops). */
  abort(reason: Error = new EnforcerCancelledError(this.label, 'agent stopping')): void {
    if (!this.lifetime.signal.aborted) this.lifetime.abort(reason);
  }

  /** Resolves when nothing is queued or running (tests, graceful stop). */
  async idle(): Promise<void> {
    for (;;) {
      const tail = this.queue;
      await tail;
      if (tail === this.queue) return;
    }
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** One call of the enforcer with its timeout; failures are recorded, then rethrown. */
  private async call<T>(operation: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    try {
      const value = await this.withTimeout(operation, fn);
      this.failures = 0;
      this.lastError = undefined;
      this.lastErrorAt = undefined;
      this.updateState();
      return value;
    } catch (err) {
      this.failures += 1;
      this.lastError = errorText(err);
      this.lastErrorAt = this.now();
      this.deps.metrics.enforcerErrors.inc({ enforcer: this.label });
      const cancelled = err instanceof EnforcerCancelledError;
      this.deps.log[cancelled ? 'warn' : 'error'](
        { err, enforcer: this.label, operation, failures: this.failures },
        cancelled ? 'enforcer call cancelled' : 'enforcer call failed; its target is replaced whole at the next sync',
      );
      this.updateState();
      throw err;
    }
  }

  private async withTimeout<T>(operation: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const timeoutMs = this.deps.timeoutMs();
    const controller = new AbortController();
    const onRetire = () => controller.abort(this.lifetime.signal.reason);
    if (this.lifetime.signal.aborted) throw this.lifetime.signal.reason;
    this.lifetime.signal.addEventListener('abort', onRetire, { once: true });
    const timer = setTimeout(() => controller.abort(new EnforcerTimeoutError(this.label, operation, timeoutMs)), timeoutMs);
    this.running = { operation, controller, since: this.now() };
    try {
      // Also released on abort when the plugin ignores the signal: the worker moves on.
      return await abortable(fn(controller.signal), controller.signal);
    } finally {
      clearTimeout(timer);
      this.lifetime.signal.removeEventListener('abort', onRetire);
      this.running = undefined;
    }
  }

  private record(result: EnforceResult): void {
    this.enforced = result.enforced;
    this.cut = result.cut;
    this.deps.metrics.enforcerEntries.set({ enforcer: this.label }, result.enforced);
    this.deps.metrics.enforcerCut.set({ enforcer: this.label }, result.cut);
  }

  private updateState(): void {
    const state: EnforcerState =
      this.lastError !== undefined ? 'failed' : this.health?.ok === false || this.applied === null || this.attested?.differs === true ? 'degraded' : 'ok';
    this.state = state;
  }

  /** The state now (`needsReplace` may have changed since the last call). */
  currentState(): EnforcerState {
    this.updateState();
    return this.state;
  }
}

async function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true, () => true), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
