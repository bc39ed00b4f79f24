import type { Logger } from 'pino';
import { engineStats, type EngineStats, type Enforcer, type EnforcerStatus, type IndicatorKind } from '@rampart/plugin-kit';
import type { PlannedEnforcer } from '../config/plugins.ts';
import type { EnforcerState, EnforcerWorker } from '../sync/enforcer-worker.ts';
import { planEnforcerSlots, type SlotStep } from './enforcer-plan.ts';
import type { AgentMetrics } from './metrics.ts';

// The worker's set type differs by kind (IPv4 KeySet, NamedSet); slots only move workers around.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyWorker = EnforcerWorker<any>;

export interface EnforcerSlot {
  label: string;
  kind: IndicatorKind;
  fingerprint: string;
  worker: AnyWorker;
}

interface Wanted extends PlannedEnforcer {
  fingerprint: string;
}

/** A wanted slot whose `create()` failed: retried with capped back-off until it works or is unwanted. */
interface FailedCreation {
  wanted: Wanted;
  attempts: number;
  error: string;
  nextAttemptAt: number;
  timer: NodeJS.Timeout;
}

/**
 * A configured enforcer the agent cannot run at all: no plugin serves its label, or its entry
 * does not validate against the plugin's schema. Not retried: only a settings change helps.
 */
export interface RefusedEnforcer {
  label: string;
  error: 'no_plugin' | 'config_invalid';
  detail: string;
}

export interface SlotHealth {
  label: string;
  state: EnforcerState;
  healthy: boolean;
  enforced: number;
  cut: number;
  /** Why the slot is not ok: its instance is missing (`no_plugin`, `config_invalid`, `create_failed`) or its last call failed (`call_failed`). */
  error?: 'no_plugin' | 'config_invalid' | 'create_failed' | 'call_failed';
  /** The last error's text (a failed call, a failed creation, the refusal). */
  detail?: string;
  last_error_at?: number;
  failures?: number;
  /** The last healthcheck, when it failed. */
  healthcheck?: { ok: boolean; detail?: string; at: number };
  /** The call running now, and for how long. */
  busy?: { operation: string; seconds: number };
  last_applied_at?: number;
  /** The enforcer's own detail (`Enforcer.status`): its parts, devices, fetches. */
  status?: EnforcerStatus;
  /** The last read-back of its target: entries held, their digest, what it should hold, whether they differ. */
  read_back?: { held: number; digest: string; expected: number; differs: boolean; at: number };
  attempts?: number;
  next_attempt_in_seconds?: number;
}

export interface EnforcerSlotsDeps {
  log: Logger;
  metrics: AgentMetrics;
  /** Runs a slot change between sync operations (the syncer's lock); `apply` callers hold it already. */
  serialize<T>(task: () => Promise<T>): Promise<T>;
  /** Wraps a new instance in its own queue (the `worker` of its kind's syncer). */
  worker(label: string, enforcer: Enforcer, kind: IndicatorKind): AnyWorker;
  /** A retried creation succeeded while running: the new instance waits for its set. */
  onCreated(): void;
  /** Back-off of retried creations: base doubled per failure, capped (defaults 5 s and 5 min). */
  retry?: { baseMs: number; maxMs: number };
  now?: () => number;
}

const fingerprintOf = (p: PlannedEnforcer): string => JSON.stringify([p.definition.name, p.kind, p.config]);

/**
 * The agent's enforcer instances. Settings changes go through `planEnforcerSlots`; this class
 * only carries the steps out, keeps failed creations visible and retried, and reports every
 * configured enforcer, whether it has an instance or not.
 */
export class EnforcerSlots {
  live: EnforcerSlot[] = [];
  private readonly failed = new Map<string, FailedCreation>();
  private refused: RefusedEnforcer[] = [];
  private running = true;
  private closed = false;
  private wantedKinds = new Set<IndicatorKind>();

  constructor(private readonly deps: EnforcerSlotsDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** The live instances' workers (what the syncer hands the block set to). */
  get workers(): AnyWorker[] {
    return this.live.map((s) => s.worker);
  }

  /** The live workers of one kind (what that kind's syncer hands its block set to). */
  workersOf(kind: IndicatorKind): AnyWorker[] {
    return this.live.filter((s) => s.kind === kind).map((s) => s.worker);
  }

  /** The kinds some configured enforcer takes (live, failing or not yet created). */
  get kinds(): Set<IndicatorKind> {
    return this.wantedKinds;
  }

  /**
   * Moves to the next plan. Call between sync operations (inside `serialize`). `refused` lists
   * configured enforcers that cannot run (reported as failed; an instance they had is withdrawn
   * and closed like any slot that is no longer wanted).
   */
  async apply(planned: PlannedEnforcer[], running: boolean, refused: RefusedEnforcer[] = []): Promise<void> {
    const wanted = new Map(planned.map((p) => [p.label, { ...p, fingerprint: fingerprintOf(p) }]));
    this.wantedKinds = new Set(planned.map((p) => p.kind));
    const steps = planEnforcerSlots(
      { running: this.running, slots: new Map(this.live.map((s) => [s.label, s.fingerprint])) },
      { running, slots: new Map([...wanted].map(([label, w]) => [label, w.fingerprint])) },
    );
    // Every failed creation still wanted has a `create` step now: a settings change retries at once.
    const attempts = new Map<string, number>();
    for (const [label, f] of this.failed) {
      clearTimeout(f.timer);
      if (wanted.get(label)?.fingerprint === f.wanted.fingerprint) attempts.set(label, f.attempts);
    }
    this.failed.clear();
    this.refused = refused.filter((r) => !wanted.has(r.label));
    this.running = running;
    for (const step of steps) await this.run(step, wanted, attempts.get(step.label) ?? 0);
  }

  private async run(step: SlotStep, wanted: Map<string, Wanted>, attempts: number): Promise<void> {
    const { log, metrics } = this.deps;
    const slot = this.live.find((s) => s.label === step.label);
    switch (step.action) {
      case 'withdraw':
        if (!slot) return;
        // A call in progress (a stalled target) is aborted by the withdraw.
        await slot.worker.withdraw().catch((err: unknown) => log.error({ err, enforcer: slot.label }, 'enforcer could not withdraw its rules'));
        return;
      case 'close':
        if (!slot) return;
        this.live = this.live.filter((s) => s !== slot);
        await slot.worker.close();
        if (!wanted.has(slot.label)) {
          metrics.enforcerEntries.remove({ enforcer: slot.label });
          metrics.enforcerCut.remove({ enforcer: slot.label });
        }
        return;
      case 'create':
        await this.create(wanted.get(step.label)!, attempts);
        return;
      case 'hand_over':
        slot?.worker.requireReplace();
        return;
    }
  }

  /** Builds an instance; on failure schedules the next attempt. True when it was created. */
  private async create(w: Wanted, attempts: number): Promise<boolean> {
    const log = this.deps.log.child({ enforcer: w.label, plugin: w.definition.name, kind: w.kind });
    try {
      const enforcer = await w.definition.create(w.config, { log, kind: w.kind });
      const worker = this.deps.worker(w.label, enforcer, w.kind);
      this.live.push({ label: w.label, kind: w.kind, fingerprint: w.fingerprint, worker });
      if (attempts > 0) log.info({ attempts }, 'enforcer created after failed attempts');
      // The first healthcheck, at start: its result shows in /healthz before any set arrives.
      void worker.checkHealth();
      return true;
    } catch (err) {
      this.deps.metrics.enforcerErrors.inc({ enforcer: w.label });
      const { baseMs, maxMs } = this.deps.retry ?? { baseMs: 5_000, maxMs: 300_000 };
      const delay = Math.min(maxMs, baseMs * 2 ** Math.min(attempts, 30));
      log.error({ err, attempts: attempts + 1, retry_in_ms: delay }, 'enforcer could not be created');
      const failure: FailedCreation = {
        wanted: w,
        attempts: attempts + 1,
        error: err instanceof Error ? err.message.slice(0, 200) : 'unknown error',
        nextAttemptAt: this.now() + delay,
        timer: setTimeout(() => void this.retry(failure), delay),
      };
      failure.timer.unref();
      this.failed.set(w.label, failure);
      return false;
    }
  }

  private retry(failure: FailedCreation): Promise<void> {
    return this.deps.serialize(async () => {
      // A settings change since then replaced (or dropped) this failure: it is not ours to retry.
      if (this.closed || this.failed.get(failure.wanted.label) !== failure) return;
      this.failed.delete(failure.wanted.label);
      if (!(await this.create(failure.wanted, failure.attempts))) return;
      // As the planner's steps for a new instance: hand over the set, or clear the target.
      if (this.running) this.deps.onCreated();
      else await this.run({ label: failure.wanted.label, action: 'withdraw' }, new Map(), 0);
    });
  }

  /** Runs every live instance's healthcheck (each on its own queue). */
  async checkHealth(): Promise<void> {
    await Promise.all(this.live.map((s) => s.worker.checkHealth()));
  }

  /** Every configured enforcer: live instances, failed creations and refused entries. */
  health(): SlotHealth[] {
    const now = this.now();
    const out: SlotHealth[] = this.live.map(({ label, worker: w }) => {
      const state = w.currentState();
      const h: SlotHealth = { label, state, healthy: state === 'ok', enforced: w.enforced, cut: w.cut };
      if (w.lastError !== undefined) {
        h.error = 'call_failed';
        h.detail = w.lastError;
        if (w.lastErrorAt !== undefined) h.last_error_at = w.lastErrorAt;
        h.failures = w.failures;
      }
      if (w.health && !w.health.ok) h.healthcheck = w.health;
      const busy = w.busy;
      if (busy) h.busy = busy;
      if (w.lastAppliedAt !== undefined) h.last_applied_at = w.lastAppliedAt;
      if (w.attested) {
        h.read_back = { ...w.attested };
        if (w.attested.differs && h.detail === undefined) h.detail = `target holds ${w.attested.held} entries, ${w.attested.expected} expected (read back); re-asserting`;
      }
      const status = w.enforcer.status?.();
      if (status) h.status = status;
      return h;
    });
    for (const [label, f] of this.failed) {
      out.push({
        label,
        state: 'failed',
        healthy: false,
        enforced: 0,
        cut: 0,
        error: 'create_failed',
        detail: f.error,
        attempts: f.attempts,
        next_attempt_in_seconds: Math.max(0, Math.ceil((f.nextAttemptAt - now) / 1000)),
      });
    }
    for (const r of this.refused) out.push({ label: r.label, state: 'failed', healthy: false, enforced: 0, cut: 0, error: r.error, detail: r.detail });
    return out.sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
  }

  /** The engine's counts of every live instance built on the engine. */
  engines(): { label: string; stats: Readonly<EngineStats> }[] {
    return this.live.flatMap(({ label, worker }) => {
      const stats = engineStats(worker.enforcer);
      return stats ? [{ label, stats }] : [];
    });
  }

  /** Wanted slots without an instance (their creation failed and is being retried). */
  get failing(): string[] {
    return [...this.failed.keys()];
  }

  /**
   * Stops retries and releases every instance; rules stay in place. Calls in progress are
   * aborted; each instance is closed once its call ended, at most `graceMs` later.
   */
  async close(graceMs?: number): Promise<void> {
    this.closed = true;
    for (const f of this.failed.values()) clearTimeout(f.timer);
    this.failed.clear();
    for (const s of this.live) s.worker.abort();
    await Promise.all(this.live.map((s) => s.worker.close(graceMs)));
  }
}
