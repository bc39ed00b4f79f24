import type { Db } from './db.ts';
import { ingestIpv4Batch, type IngestOptions, type IngestProgress, type IngestResult, type IngestRules, type Ipv4ReportItem } from './ipv4-ingest.ts';
import { ingestIpv4OneStatement, oneStatementFits } from './ipv4-ingest-one.ts';

/** `ingestIpv4Batch` bound to one database (Store.ipv4Ingest): the batcher never holds the handle. */
export class Ipv4IngestStore {
  constructor(private readonly db: Db) {}
  /** PGlite has one connection: a second transaction in flight only waits for it. */
  get concurrent(): boolean {
    return this.db.kind === 'postgres';
  }
  /**
   * A batch of plain reports as one statement (one round trip, committed on its own), else, or
   * when that statement cannot take it, as the transaction of ingestIpv4Batch.
   */
  async ingest(items: Ipv4ReportItem[], rules: IngestRules, nowSeconds: number, progress: IngestProgress = {}, options: IngestOptions = {}): Promise<IngestResult> {
    if (oneStatementFits(items, rules, options)) {
      progress.begun?.();
      progress.locked?.();
      // PGlite's notifications are in-process: the caller publishes them after the commit.
      const { notifyChannel, ...rest } = options;
      const result = await ingestIpv4OneStatement(this.db, items, rules, nowSeconds, this.db.kind === 'postgres' && notifyChannel ? { ...rest, notifyChannel } : rest);
      if (result) {
        if (result.notified) this.db.notified?.();
        progress.committing?.();
        return result;
      }
    }
    return ingestIpv4Batch(this.db, items, rules, nowSeconds, progress, options);
  }
}
