import type { Db } from './db.ts';
import {
  completeBefore,
  groupedPage,
  mergeReport,
  mergeTags,
  reportAggregates,
  TABLES,
  type ReportAggregate,
  type ReportOutcome,
  type Scorer,
} from './indicator-sql.ts';

/** A domain or URL indicator as seen by one organization (its decision joined). */
export interface NamedRow {
  id: number;
  value: string;
  score: number;
  ts: number;
  entry_ts: number;
  members: number;
  events: number;
  tags: string[];
  /** The caller organization's decision; null when it never took one. */
  decision: -1 | 0 | 1 | null;
}

export interface NamedReport {
  orgId: number;
  /** Already normalized (services/indicator-names.ts). */
  value: string;
  confidence: number;
  tags?: readonly string[] | undefined;
  nowTs: number;
}

/**
 * Domains and URLs: the same tables and rules, keyed by their normalized text. `kind` picks the
 * table set; the SQL text is built from constants only.
 */
export class NamedIndicatorStore {
  private readonly t: (typeof TABLES)['domain' | 'url'];
  private readonly select: string;

  constructor(
    private readonly db: Db,
    private readonly kind: 'domain' | 'url',
  ) {
    this.t = TABLES[kind];
    this.select = `select i.id, i.value, i.score, i.ts, i.entry_ts, i.members, i.events, i.tags, d.decision
      from ${this.t.indicators} i
      left join ${this.t.decisions} d on d.org_id = $1 and d.value = i.value`;
  }

  /** Merges a report and commits before returning: the caller acknowledges only after this. */
  async report(input: NamedReport, scorer: Scorer): Promise<ReportOutcome> {
    const t = this.t;
    return this.db.transaction(async (tx) => {
      await tx.query(`insert into ${t.indicators} (value, score, ts, entry_ts) values ($1, 1, 0, 0) on conflict (value) do nothing`, [input.value]);
      const locked = await tx.query<{ id: number; ts: number; tags: string[] }>(`select id, ts, tags from ${t.indicators} where value = $1 for update`, [input.value]);
      const row = locked.rows[0]!;
      const merged = await mergeReport(tx, this.kind, { indicatorId: row.id, currentTs: row.ts, orgId: input.orgId, confidence: input.confidence, nowTs: input.nowTs }, scorer);
      await tx.query(
        `update ${t.indicators} set score = $2, ts = $3, members = $4, events = $5, tags = $6,
           entry_ts = case when entry_ts = 0 then $3 else entry_ts end
         where id = $1`,
        [row.id, merged.score, merged.ts, merged.members, merged.events, mergeTags(row.tags, input.tags)],
      );
      return { indicatorId: row.id, ts: merged.ts, newReporter: merged.newReporter, score: merged.score };
    });
  }

  /** The organization's decision on a value, whether or not it is an indicator yet. */
  async setDecision(orgId: number, value: string, decision: -1 | 0 | 1): Promise<void> {
    await this.db.query(
      `insert into ${this.t.decisions} (org_id, value, decision) values ($1, $2, $3)
       on conflict (org_id, value) do update set decision = excluded.decision, updated_at = now()`,
      [orgId, value, decision],
    );
  }

  async byValue(orgId: number, value: string): Promise<NamedRow | undefined> {
    const res = await this.db.query<NamedRow>(`${this.select} where i.value = $2`, [orgId, value]);
    return res.rows[0];
  }

  aggregates(indicatorId: number): Promise<ReportAggregate[]> {
    return reportAggregates(this.db, this.kind, indicatorId);
  }

  /**
   * A feed page for one organization: its whitelisted indicators are left out (they never
   * block), and only records at least `delaySeconds` old are served.
   */
  async feedPage(orgId: number, since: number, pageSize: number, delaySeconds: number): Promise<NamedRow[]> {
    const complete = await completeBefore(this.db);
    const upper = Math.min(complete, complete - delaySeconds + 1);
    return groupedPage<NamedRow>(this.db, this.select, 'coalesce(d.decision, -1) <> 0', [orgId], { since, upper, pageSize });
  }

  /**
   * A page of (id, value, score, ts, decision) by id after `afterId`, for the score lists: the
   * list filters by live score, so the store hands out candidates by s0 >= minS0 (a live score
   * never exceeds s0) plus the organization's blacklist.
   */
  async scoreCandidates(orgId: number, minS0: number, afterId: number, limit: number): Promise<NamedRow[]> {
    const res = await this.db.query<NamedRow>(
      `${this.select} where i.id > $2 and (i.score >= $3 or d.decision = 1) and coalesce(d.decision, -1) <> 0 order by i.id limit $4`,
      [orgId, afterId, minS0, limit],
    );
    return res.rows;
  }

  /** The highest `ts` of any record: changes whenever the feed changes (list ETags). */
  async version(orgId: number): Promise<string> {
    const res = await this.db.query<{ v: string }>(
      `select concat_ws(':', (select coalesce(max(ts), 0) from ${this.t.indicators}), (select count(*) from ${this.t.indicators}),
         (select coalesce(max(extract(epoch from updated_at)), 0) from ${this.t.decisions} where org_id = $1)) as v`,
      [orgId],
    );
    return res.rows[0]!.v;
  }
}
