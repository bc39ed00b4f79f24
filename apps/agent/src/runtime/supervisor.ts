import { backoffDelay } from '@rampart/client';
import type { Detection, DetectionMode, OffsetStore, PluginLogger, SourceDefinition } from '@rampart/plugin-kit';
import type { AgentMetrics } from './metrics.ts';

export interface SupervisedSource {
  label: string;
  definition: SourceDefinition<unknown>;
  config: unknown;
  mode: DetectionMode;
}

export interface SupervisorOptions {
  log: PluginLogger;
  metrics: AgentMetrics;
  offsets: OffsetStore;
  /** The agent's state directory, handed to sources for files of their own (journal cursors). */
  stateDir?: string;
  emit(label: string, detection: Detection): void;
  /** Back-off between restarts; a source that ran `healthyAfterMs` starts over from the first step. */
  backoff?: { baseMs: number; maxMs: number };
  healthyAfterMs?: number;
}

interface Running {
  spec: SupervisedSource;
  fingerprint: string;
  controller: AbortController;
  loop: Promise<void>;
  /** Failed or ended runs in a row (reset once a run lasts `healthyAfterMs`). */
  failures: number;
  restarts: number;
  lastError?: string;
  lastErrorAt?: number;
  /** When the current run started (ms). */
  runSince: number;
}

/** A source as /healthz and `rampart-agent status` report it. */
export interface SourceHealth {
  label: string;
  /**
   * ok: running (with no failure, or for `healthyAfterMs` since the last one); degraded: failed
   * and restarted; failed: failed 3 times in a row, each within `healthyAfterMs` of its start.
   */
  state: 'ok' | 'degraded' | 'failed';
  restarts: number;
  last_error?: string;
  last_error_at?: number;
}

/** Consecutive failures from which a source counts as failed rather than degraded. */
const FAILED_AFTER = 3;

/**
 * Runs each source and restarts it with back-off when it fails or ends on its own (conventions
 * §4: sources only emit; retries live here). One log line per restart.
 */
export class Supervisor {
  private readonly running = new Map<string, Running>();

  constructor(private readonly options: SupervisorOptions) {}

  get labels(): string[] {
    return [...this.running.keys()];
  }

  health(): SourceHealth[] {
    return [...this.running.entries()]
      .map(([label, r]): SourceHealth => {
        const settled = Date.now() - r.runSince > (this.options.healthyAfterMs ?? 60_000);
        const state = r.failures === 0 || settled ? 'ok' : r.failures < FAILED_AFTER ? 'degraded' : 'failed';
        return {
          label,
          state,
          restarts: r.restarts,
          ...(r.lastError !== undefined ? { last_error: r.lastError } : {}),
          ...(r.lastErrorAt !== undefined ? { last_error_at: r.lastErrorAt } : {}),
        };
      })
      .sort((a, b) => (a.label < b.label ? -1 : 1));
  }

  /** Starts what is new, restarts what changed, stops what is gone. */
  async update(specs: SupervisedSource[]): Promise<void> {
    const wanted = new Map(specs.map((s) => [s.label, s]));
    for (const [label, r] of this.running) {
      const next = wanted.get(label);
      if (!next || fingerprintOf(next) !== r.fingerprint) await this.stopOne(label);
    }
    for (const spec of specs) if (!this.running.has(spec.label)) this.startOne(spec);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.running.keys()].map((label) => this.stopOne(label)));
  }

  private startOne(spec: SupervisedSource): void {
    const controller = new AbortController();
    const entry: Running = { spec, fingerprint: fingerprintOf(spec), controller, loop: Promise.resolve(), failures: 0, restarts: 0, runSince: Date.now() };
    this.running.set(spec.label, entry);
    entry.loop = this.loop(spec, controller.signal, entry);
  }

  private async stopOne(label: string): Promise<void> {
    const r = this.running.get(label);
    if (!r) return;
    this.running.delete(label);
    r.controller.abort(new Error('source stopped'));
    await r.loop;
  }

  private async loop(spec: SupervisedSource, signal: AbortSignal, entry: Running): Promise<void> {
    const { log: parent, metrics, offsets } = this.options;
    const log = parent.child({ source: spec.label, plugin: spec.definition.name });
    const backoff = this.options.backoff ?? { baseMs: 1000, maxMs: 300_000 };
    let failures = 0;
    while (!signal.aborted) {
      const startedAt = Date.now();
      entry.runSince = startedAt;
      let error: unknown;
      try {
        const running = spec.definition.start(spec.config, spec.mode, {
          log,
          signal,
          offsets,
          ...(this.options.stateDir !== undefined ? { stateDir: this.options.stateDir } : {}),
          emit: (detection) => this.options.emit(spec.label, detection),
          linesRead: (count) => metrics.linesRead.inc({ source: spec.label }, count),
        });
        await running.done;
      } catch (err) {
        error = err;
      }
      if (signal.aborted) return;
      if (Date.now() - startedAt > (this.options.healthyAfterMs ?? 60_000)) failures = 0;
      const delay = backoffDelay(failures++, backoff);
      entry.failures = failures;
      entry.restarts += 1;
      entry.lastError = (error instanceof Error ? error.message : typeof error === 'string' ? error : error ? JSON.stringify(error) : 'source ended on its own').slice(0, 300);
      entry.lastErrorAt = Math.floor(Date.now() / 1000);
      metrics.sourceRestarts.inc({ source: spec.label });
      log.warn({ err: error, retryInMs: delay }, error ? 'source failed; restarting' : 'source ended; restarting');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        }, { once: true });
      });
    }
  }
}

function fingerprintOf(spec: SupervisedSource): string {
  return JSON.stringify([spec.definition.name, spec.mode, spec.config]);
}
