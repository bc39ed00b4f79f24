import { ClientApiError, InsufficientCoinsError, backoffDelay, sleep, type RampartClient } from '@rampart/client';
import type { PluginLogger } from '@rampart/plugin-kit';
import type { Spool } from './spool.ts';
import type { AgentMetrics } from './metrics.ts';

export interface ReporterOptions {
  client: RampartClient;
  spool: Spool;
  log: PluginLogger;
  metrics: AgentMetrics;
  gaid: () => string | undefined;
  /** Back-off between failed attempts. */
  backoff?: { baseMs: number; maxMs: number };
  /** Wait after a 402 before trying again: coins come back only when an operator grants them. */
  coinsWaitMs?: number;
}

/** Problems a later attempt cannot fix: the report is dropped (and counted), not retried forever. */
function isPermanent(err: unknown): boolean {
  return err instanceof ClientApiError && (err.status === 400 || err.status === 403 || err.status === 413 || err.status === 422);
}

/**
 * Sends spooled reports strictly in order, one at a time, and acknowledges each in the spool
 * only after a 2xx. Network errors and 5xx back off with jitter; 429 waits its Retry-After;
 * 402 waits long (the report is kept). Every attempt of one report carries the same
 * Idempotency-Key, so a server that honours it keeps exactly one copy of a report resent after
 * a crash between its 2xx and the acknowledgement.
 */
export class Reporter {
  private wake: (() => void) | undefined;
  private paused = false;
  private stopped = new AbortController();
  private loop: Promise<void> | undefined;
  private failures = 0;

  constructor(private readonly options: ReporterOptions) {}

  start(): void {
    this.loop ??= this.run().catch((err: unknown) => this.options.log.error({ err }, 'reporter stopped on an unexpected error'));
  }

  /** Something was appended: send it now instead of at the next timer. */
  notify(): void {
    this.wake?.();
  }

  /** `running = no`: keep the spool, stop sending. */
  setPaused(paused: boolean): void {
    this.paused = paused;
    if (!paused) this.notify();
  }

  async stop(): Promise<void> {
    this.stopped.abort(new Error('reporter stopped'));
    this.notify();
    await this.loop;
  }

  private idle(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      const onAbort = () => done();
      this.stopped.signal.addEventListener('abort', onAbort, { once: true });
      this.wake = done;
      function done() {
        clearTimeout(timer);
        resolve();
      }
    }).then(() => {
      this.wake = undefined;
    });
  }

  private async run(): Promise<void> {
    const { spool, client, log, metrics } = this.options;
    const backoff = this.options.backoff ?? { baseMs: 500, maxMs: 60_000 };
    while (!this.stopped.signal.aborted) {
      metrics.spoolDepth.set(spool.depth);
      const [next] = spool.peek(1);
      if (!next || this.paused) {
        await this.idle(60_000);
        continue;
      }
      try {
        const gaid = this.options.gaid();
        await client.reportIp(next.body, { idempotencyKey: next.id, retries: 0, signal: this.stopped.signal, ...(gaid ? { gaid } : {}) });
        await spool.ack(next.seq);
        metrics.reportsSent.inc();
        this.failures = 0;
      } catch (err) {
        if (this.stopped.signal.aborted) return;
        if (isPermanent(err)) {
          log.warn({ err, ip: next.body.ip, seq: next.seq }, 'report rejected by the server; dropped');
          metrics.reportsRejected.inc();
          await spool.ack(next.seq);
          continue;
        }
        metrics.reportErrors.inc({ kind: kindOf(err) });
        const wait = this.waitAfter(err, backoff);
        log.warn({ err, seq: next.seq, waitMs: wait, depth: spool.depth }, 'report not sent; will retry');
        this.failures += 1;
        await sleep(wait, this.stopped.signal).catch(() => undefined);
      }
    }
  }

  private waitAfter(err: unknown, backoff: { baseMs: number; maxMs: number }): number {
    if (err instanceof InsufficientCoinsError) return this.options.coinsWaitMs ?? 300_000;
    if (err instanceof ClientApiError && err.retryAfterSeconds !== undefined) return err.retryAfterSeconds * 1000;
    return backoffDelay(this.failures, backoff);
  }
}

function kindOf(err: unknown): string {
  if (err instanceof ClientApiError) return String(err.status);
  return 'network';
}
