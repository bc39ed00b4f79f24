import { ClientApiError, InsufficientCoinsError, backoffDelay, sleep, type RampartClient } from '@rampart/client';
import type { PluginLogger } from '@rampart/plugin-kit';
import type { Spool, SpooledReport } from './spool.ts';
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
  /**
   * The oldest pending report may already be on the server: after a restart (the process may
   * have died between the server's 2xx and the spool's acknowledgement) and after an attempt
   * that failed in a way the server may still have committed (network error, 5xx, timeout).
   */
  private uncertain = true;
  private lookupForbidden = false;

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
        if (this.uncertain) {
          const received = await this.alreadyReceived(next);
          this.uncertain = false;
          if (received) {
            log.info({ seq: next.seq, ip: next.body.ip }, 'report was already received before a failure; not sent again');
            await spool.ack(next.seq);
            metrics.reportsDeduplicated.inc();
            continue;
          }
        }
        const gaid = this.options.gaid();
        const body = { ...next.body, notes: withMarker(next.body.notes, next.id) };
        await client.reportIp(body, { idempotencyKey: next.id, retries: 0, signal: this.stopped.signal, ...(gaid ? { gaid } : {}) });
        await spool.ack(next.seq);
        metrics.reportsSent.inc();
        this.failures = 0;
      } catch (err) {
        if (mayHaveCommitted(err)) this.uncertain = true;
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

  /**
   * Whether the server holds this report already: its marker is among the indicator's notes
   * (the server keeps the latest ones). Only the oldest pending report can be in this state,
   * since reports are sent one at a time, in order.
   */
  private async alreadyReceived(report: SpooledReport): Promise<boolean> {
    if (report.body.ip.includes('/') || this.lookupForbidden) return false;
    try {
      const page = await this.options.client.ipLookup(report.body.ip, { full: 'yes' }, { retries: 0, signal: this.stopped.signal });
      const marker = markerOf(report.id);
      return page.body.some((record) => record.info?.notes.some((note) => note.includes(marker)) ?? false);
    } catch (err) {
      if (err instanceof ClientApiError && err.status === 404) return false;
      if (err instanceof ClientApiError && (err.status === 401 || err.status === 403)) {
        // This key may not look indicators up: delivery falls back to at-least-once (the
        // Idempotency-Key header is then the server's only way to drop a resent copy).
        this.lookupForbidden = true;
        this.options.log.warn({ status: err.status }, 'key may not look up indicators; a report resent after a failure may be counted twice');
        return false;
      }
      throw err;
    }
  }

  private waitAfter(err: unknown, backoff: { baseMs: number; maxMs: number }): number {
    if (err instanceof InsufficientCoinsError) return this.options.coinsWaitMs ?? 300_000;
    if (err instanceof ClientApiError && err.retryAfterSeconds !== undefined) return err.retryAfterSeconds * 1000;
    return backoffDelay(this.failures, backoff);
  }
}

/** Failures after which the server may still have stored the report. */
function mayHaveCommitted(err: unknown): boolean {
  if (err instanceof ClientApiError) return err.status >= 500;
  return true;
}

export function markerOf(id: string): string {
  return `[rampart-report ${id}]`;
}

/** The report's notes with its marker, which lets a restarted agent recognise it on the server. */
export function withMarker(notes: string | undefined, id: string): string {
  const marker = markerOf(id);
  const text = notes ? `${notes} ${marker}` : marker;
  return text.length <= 4096 ? text : `${notes!.slice(0, 4096 - marker.length - 2)}… ${marker}`;
}

function kindOf(err: unknown): string {
  if (err instanceof ClientApiError) return String(err.status);
  return 'network';
}
