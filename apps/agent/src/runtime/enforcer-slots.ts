import type { Logger } from 'pino';
import type { PlannedEnforcer } from '../config/plugins.ts';
import type { ActiveEnforcer } from '../sync/syncer.ts';
import { planEnforcerSlots, type SlotStep } from './enforcer-plan.ts';
import type { AgentMetrics } from './metrics.ts';

export interface EnforcerSlot extends ActiveEnforcer {
  fingerprint: string;
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

export interface SlotHealth {
  label: string;
  healthy: boolean;
  enforced: number;
  cut: number;
  /** Present when the slot has no instance: why, how often it was tried, when it is tried next. */
  error?: 'create_failed';
  detail?: string;
  attempts?: number;
  next_attempt_in_seconds?: number;
}

export interface EnforcerSlotsDeps {
  log: Logger;
  metrics: AgentMetrics;
  /** Runs a slot change between sync operations (the syncer's lock); `apply` callers hold it already. */
  serialize<T>(task: () => Promise<T>): Promise<T>;
  /** A retried creation succeeded while running: the new instance waits for its set. */
  onCreated(): void;
  /** Back-off of retried creations: base doubled per failure, capped (defaults 5 s and 5 min). */
  retry?: { baseMs: number; maxMs: number };
  now?: () => number;
}

const fingerprintOf = (p: PlannedEnforcer): string => JSON.stringify([p.definition.name, p.config]);

/**
 * The agent's enforcer instances. Settings changes go through `planEnforcerSlots`; this class
 * only carries the steps out and keeps failed creations visible and retried.
 */
export class EnforcerSlots {
  live: EnforcerSlot[] = [];
  private readonly failed = new Map<string, FailedCreation>();
  private running = true;
  private closed = false;

  constructor(private readonly deps: EnforcerSlotsDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** Moves to the next plan. Call between sync operations (inside `serialize`). */
  async apply(planned: PlannedEnforcer[], running: boolean): Promise<void> {
    const wanted = new Map(planned.map((p) => [p.label, { ...p, fingerprint: fingerprintOf(p) }]));
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
    this.running = running;
    for (const step of steps) await this.run(step, wanted, attempts.get(step.label) ?? 0);
  }

  private async run(step: SlotStep, wanted: Map<string, Wanted>, attempts: number): Promise<void> {
    const { log, metrics } = this.deps;
    const slot = this.live.find((s) => s.label === step.label);
    switch (step.action) {
      case 'withdraw':
        if (!slot) return;
        try {
          await slot.enforcer.withdraw();
          slot.enforced = 0;
          slot.cut = 0;
          metrics.enforcerEntries.set({ enforcer: slot.label }, 0);
        } catch (err) {
          metrics.enforcerErrors.inc({ enforcer: slot.label });
          log.error({ err, enforcer: slot.label }, 'enforcer could not withdraw its rules');
        }
        return;
      case 'close':
        if (!slot) return;
        this.live = this.live.filter((s) => s !== slot);
        await slot.enforcer.close().catch((err: unknown) => log.warn({ err, enforcer: slot.label }, 'enforcer did not close cleanly'));
        if (!wanted.has(slot.label)) {
          metrics.enforcerEntries.remove({ enforcer: slot.label });
          metrics.enforcerCut.remove({ enforcer: slot.label });
        }
        return;
      case 'create':
        await this.create(wanted.get(step.label)!, attempts);
        return;
      case 'hand_over':
        if (slot) slot.needsReplace = true;
        return;
    }
  }

  /** Builds an instance; on failure schedules the next attempt. True when it was created. */
  private async create(w: Wanted, attempts: number): Promise<boolean> {
    const log = this.deps.log.child({ enforcer: w.label, plugin: w.definition.name });
    try {
      const enforcer = await w.definition.create(w.config, { log });
      this.live.push({ label: w.label, enforcer, needsReplace: true, fingerprint: w.fingerprint });
      if (attempts > 0) log.info({ attempts }, 'enforcer created after failed attempts');
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

  health(): SlotHealth[] {
    const now = this.now();
    const out: SlotHealth[] = this.live.map((e) => ({ label: e.label, healthy: !e.needsReplace, enforced: e.enforced ?? 0, cut: e.cut ?? 0 }));
    for (const [label, f] of this.failed) {
      out.push({
        label,
        healthy: false,
        enforced: 0,
        cut: 0,
        error: 'create_failed',
        detail: f.error,
        attempts: f.attempts,
        next_attempt_in_seconds: Math.max(0, Math.ceil((f.nextAttemptAt - now) / 1000)),
      });
    }
    return out.sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
  }

  /** Wanted slots without an instance (their creation failed and is being retried). */
  get failing(): string[] {
    return [...this.failed.keys()];
  }

  /** Stops retries and releases every instance; rules stay in place. */
  async close(): Promise<void> {
    this.closed = true;
    for (const f of this.failed.values()) clearTimeout(f.timer);
    this.failed.clear();
    for (const e of this.live) await e.enforcer.close().catch(() => undefined);
  }
}
