import { anchorTs, reanchoredScore, scoreV32, scoreV32Tables } from '@rampart/scoring';
import type { FastifyBaseLogger } from 'fastify';
import { ReservedInBatchError, type IngestRules, type Ipv4IngestStore, type Ipv4ReportItem, type Ipv4ReportOutcome } from '../../store/index.ts';
import { EVENTS_CHANNEL, type EventBus } from '../events.ts';

/** Where a batch's time goes (seconds) and how many reports it carried. */
export interface BatchTiming {
  reports: number;
  /** Taking a connection and opening the transaction. */
  begin: number;
  /** The first statement: reserved items, row locks, new rows, earlier reporters. */
  lock: number;
  /** Everything after it up to the COMMIT: decisions, scoring, the write statement (a batch run as one statement: all of it, its commit included). */
  write: number;
  commit: number;
}

/** Scoring v3.2 as the write path applies it. */
export const V32_INGEST_RULES: IngestRules = {
  score: (aggregates) => scoreV32(aggregates.map((a) => ({ orgTrust: a.trust, confidence: a.confidence, events: a.events }))).s0,
  anchor: (previousTs, previousOrgs, orgId, reportTs, scores) => anchorTs(previousTs, previousOrgs, orgId, reportTs, scores),
  reanchoredScore,
  sqlTables: scoreV32Tables(),
};

export interface ReportBatcherOptions {
  /** The report transaction (Store.ipv4Ingest). */
  ingest: Pick<Ipv4IngestStore, 'ingest' | 'concurrent'>;
  events: EventBus;
  log: FastifyBaseLogger;
  /** Most reports per transaction. */
  maxBatch?: number;
  /**
   * Transactions in flight at once (PGlite has one connection: 1); at most `maxWorking` of them
   * run their statements, the others are committing (waiting for their WAL flush).
   */
  maxInFlight?: number;
  /** Transactions running their statements at once (default 1; PGlite can only run 1). */
  maxWorking?: number;
  /** Called with each committed batch's timing (the metrics of /metrics). */
  observe?: (timing: BatchTiming) => void;
}

interface Pending {
  items: Ipv4ReportItem[];
  /** A group stored all or nothing, in a transaction of its own (submitAll). */
  atomic: boolean;
  resolve(outcomes: Ipv4ReportOutcome[]): void;
  reject(err: unknown): void;
}

/**
 * Group commit for `POST /ips`. Requests that arrive while transactions are running their
 * statements wait for the next one, so under load one commit (and one turn on the feed clock)
 * serves many reports, while a lone report is written at once. At most `maxWorking` batches at a
 * time (default 1) run their statements: another starts when one of them only has its COMMIT
 * left, so batches grow with the number of requests waiting, and a batch's WAL flush overlaps the
 * next batch's work. Each caller's promise settles only after its batch committed:
 * a 2xx is never sent for a report that is not durable. A batch of plain reports is one
 * statement committed on its own (Ipv4IngestStore.ingest): it has no separate COMMIT, so the next
 * batch starts once it returned, and gathers the requests that arrived meanwhile. A batch leaves its slot once its callers
 * are answered; its notifications follow without holding up the next batch.
 */
export class ReportBatcher {
  private queue: Pending[] = [];
  private inFlight = 0;
  /** Batches running their statements (not yet committing). */
  private working = 0;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;
  private readonly maxWorking: number;

  constructor(private readonly options: ReportBatcherOptions) {
    this.maxBatch = options.maxBatch ?? 256;
    // One batch through its statements at a time by default, on PostgreSQL too: two at once
    // (maxWorking 2) split the same waiting requests into batches half the size, and each report
    // then cost PostgreSQL ~30% more CPU, which on a 2-core machine shared with the client lost
    // more than the overlapped round trips won (bench/pg-ingest.ts, 2026-11-27).
    this.maxInFlight = Math.max(1, options.maxInFlight ?? (options.ingest.concurrent ? 2 : 1));
    this.maxWorking = Math.min(this.maxInFlight, Math.max(1, options.maxWorking ?? 1));
  }

  submit(item: Ipv4ReportItem): Promise<Ipv4ReportOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ items: [item], atomic: false, resolve: (outcomes) => resolve(outcomes[0]!), reject });
      this.drain();
    });
  }

  /**
   * Reports stored all or nothing: one transaction of their own (never shared with other
   * requests, whose failure would otherwise fail them too), in which a reserved item fails them
   * all (ReservedInBatchError) and any other failure stores none of them.
   */
  submitAll(items: Ipv4ReportItem[]): Promise<Ipv4ReportOutcome[]> {
    if (items.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.queue.push({ items, atomic: true, resolve, reject });
      this.drain();
    });
  }

  /** The next batch: an all-or-nothing group alone, else the single reports up to the next group. */
  private take(): Pending[] {
    if (this.queue[0]!.atomic) return this.queue.splice(0, 1);
    let n = 0;
    while (n < this.queue.length && n < this.maxBatch && !this.queue[n]!.atomic) n += 1;
    return this.queue.splice(0, n);
  }

  private drain(): void {
    while (this.working < this.maxWorking && this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.take();
      this.inFlight += 1;
      this.working += 1;
      let committing = false;
      let done = false;
      const release = () => {
        if (committing) return;
        committing = true;
        this.working -= 1;
        this.drain();
      };
      // Once its callers are answered the batch leaves its slot, before its notifications go out.
      const settled = () => {
        if (done) return;
        done = true;
        this.inFlight -= 1;
        if (committing) this.drain();
        else release();
      };
      void this.run(batch, release, settled).finally(settled);
    }
  }

  private async run(batch: Pending[], committing: () => void, settled: () => void): Promise<void> {
    let result;
    const marks = { start: performance.now(), begun: 0, locked: 0, committing: 0 };
    const items = batch.flatMap((p) => p.items);
    try {
      const progress = {
        begun: () => (marks.begun = performance.now()),
        locked: () => (marks.locked = performance.now()),
        committing: () => {
          marks.committing = performance.now();
          committing();
        },
      };
      // A batch of plain reports is one statement that sends its feed_changed with its commit (PostgreSQL).
      result = await this.options.ingest.ingest(items, V32_INGEST_RULES, Math.floor(Date.now() / 1000), progress, { allOrNothing: batch[0]!.atomic, notifyChannel: EVENTS_CHANNEL });
    } catch (err) {
      if (batch.length > 1) {
        // One failing report (or a deadlock victim) must not fail its neighbours: each alone.
        this.options.log.warn({ err, reports: batch.length }, 'ipv4 report batch failed, retrying one by one');
        for (const p of batch) await this.run([p], committing, () => {});
        return;
      }
      // A reserved item of an all-or-nothing group is the caller's to answer, not a failure.
      if (!(err instanceof ReservedInBatchError)) this.options.log.error({ err }, 'ipv4 report failed');
      for (const p of batch) p.reject(err);
      return;
    }
    const committed = performance.now();
    let offset = 0;
    for (const p of batch) {
      p.resolve(result.outcomes.slice(offset, offset + p.items.length));
      offset += p.items.length;
    }
    settled();
    if (this.options.observe) {
      const seconds = (from: number, to: number) => (to - from) / 1000;
      this.options.observe({
        reports: items.length,
        begin: seconds(marks.start, marks.begun),
        lock: seconds(marks.begun, marks.locked),
        write: seconds(marks.locked, marks.committing),
        commit: seconds(marks.committing, committed),
      });
    }
    // Notifications after the commit: a listener that reads at once sees the change.
    const { events } = this.options;
    const publishes: Array<Promise<void>> = [];
    if (result.feedTs !== null && !result.notified) publishes.push(events.publish({ type: 'feed_changed', org_id: null, kind: 'ipv4', ts: result.feedTs }));
    for (const d of result.decisions) {
      const indicator = d.network.endsWith('/32') ? d.network.slice(0, -3) : d.network;
      publishes.push(events.publish({ type: 'decision_changed', org_id: d.orgId, kind: 'ipv4', indicator, decision: d.decision, ttl: d.ttl, ...(result.feedTs !== null ? { ts: result.feedTs } : {}) }));
    }
    await Promise.all(publishes).catch((err: unknown) => this.options.log.warn({ err }, 'could not publish ipv4 events'));
  }
}
