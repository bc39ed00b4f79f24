import type { Db } from './db.ts';
import {
  completeBefore,
  type DecisionNote,
  NO_NOTE,
  decisionsVersion,
  anchoredPage,
  anchorForOrg,
  anchorJoin,
  decayEndSql,
  EFFECTIVE,
  type Effective,
  listBoundary,
  listRows,
  listVersion,
  moveDecision,
  scoreListSql,
  type ScoreListFilter,
  mergeReport,
  mergeTags,
  reportAggregates,
  TABLES,
  type ReportAggregate,
  type ReportOutcome,
  type Scorer,
  heldOrDecisionRecord,
} from './indicator-sql.ts';

/** A decision row as its organization's record of a value nobody reported (migration 0018): score 0, its own id and ts. */
const DECISION_RECORD = `d.id, d.value, 0 as score, d.ts, d.ts as entry_ts, 0 as members, 0 as events, '{}'::text[] as tags, d.decision`;

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
  /** Already normalized (services/named/indicator-names.ts). */
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
  private readonly decisionJoin: string;
  private readonly columns = (e: Effective) => `i.id, i.value, ${e.score} as score, ${e.ts} as ts, i.entry_ts, i.members, i.events, i.tags, d.decision`;

  constructor(
    private readonly db: Db,
    private readonly kind: 'domain' | 'url',
  ) {
    this.t = TABLES[kind];
    this.decisionJoin = `left join ${this.t.decisions} d on d.org_id = $1 and d.value = i.value`;
    this.select = `select ${this.columns(EFFECTIVE)} from ${this.t.indicators} i ${this.decisionJoin} ${anchorJoin(kind, '$1')}`;
  }

  /** Merges a report and commits before returning: the caller acknowledges only after this. */
  async report(input: NamedReport, scorer: Scorer): Promise<ReportOutcome> {
    const t = this.t;
    return this.db.transaction(async (tx) => {
      await tx.query(`insert into ${t.indicators} (value, score, ts, entry_ts) values ($1, 1, 0, 0) on conflict (value) do nothing`, [input.value]);
      const locked = await tx.query<{ id: number; ts: number; score: number; tags: string[] }>(`select id, ts, score, tags from ${t.indicators} where value = $1 for update`, [input.value]);
      const row = locked.rows[0]!;
      const merged = await mergeReport(
        tx,
        this.kind,
        { indicatorId: row.id, currentTs: Number(row.ts), currentScore: row.score, orgId: input.orgId, confidence: input.confidence, nowTs: input.nowTs },
        scorer,
      );
      await tx.query(
        `update ${t.indicators} set score = $2, ts = $3, members = $4, events = $5, tags = $6,
           entry_ts = case when entry_ts = 0 then $3 else entry_ts end
         where id = $1`,
        [row.id, merged.score, merged.ts, merged.members, merged.events, mergeTags(row.tags, input.tags)],
      );
      return { indicatorId: row.id, ts: merged.ts, newReporter: merged.newReporter, moved: merged.moved, score: merged.score };
    });
  }

  /**
   * The organization's decision on a value, whether or not it is an indicator yet; a held
   * indicator is delivered again to that organization (anchorForOrg) in the same transaction, and
   * so is the decision's own record while nobody reports the value (moveDecision).
   */
  async setDecision(orgId: number, value: string, decision: -1 | 0 | 1, reanchor: (s0: number, elapsed: number) => number, note: DecisionNote = NO_NOTE): Promise<number> {
    return this.db.transaction(async (tx) => {
      await tx.query(
        `insert into ${this.t.decisions} (org_id, value, decision, reason, set_by) values ($1, $2, $3, $4, $5)
         on conflict (org_id, value) do update set decision = excluded.decision, reason = excluded.reason, set_by = excluded.set_by, updated_at = now()`,
        [orgId, value, decision, note.reason, note.setBy],
      );
      const held = await tx.query<{ id: number }>(`select id from ${this.t.indicators} where value = $1`, [value]);
      const anchored = held.rows[0] ? await anchorForOrg(tx, this.kind, orgId, held.rows[0].id, reanchor) : undefined;
      const moved = await moveDecision(tx, this.kind, orgId, value);
      // The change's version: the feed second of the record the organization's feed now carries.
      return anchored ?? moved;
    });
  }

  /**
   * The look-up: the indicator as the organization sees it, else the organization's own decision
   * record on the value (migration 0018), the record its feed holds: a cleared one too, with
   * decision null (a TAXII consumer got it, revoked, and must find it).
   */
  async lookup(orgId: number, value: string): Promise<NamedRow | undefined> {
    const res = await this.db.query<NamedRow>(heldOrDecisionRecord(this.kind, this.select, DECISION_RECORD, { indicator: 'i.value = $2', decision: 'd.value = $2' }), [orgId, value]);
    return res.rows[0];
  }

  async byValue(orgId: number, value: string): Promise<NamedRow | undefined> {
    const res = await this.db.query<NamedRow>(`${this.select} where i.value = $2`, [orgId, value]);
    return res.rows[0];
  }

  aggregates(indicatorId: number): Promise<ReportAggregate[]> {
    return reportAggregates(this.db, this.kind, indicatorId);
  }

  /**
   * A feed page for one organization over the pairs it sees (whitelisted records included, with
   * decision 0, so a follower learns of the whitelist), and its decision records on values nobody
   * reported (cleared ones too, with decision null); only records at least `delaySeconds` old.
   */
  async feedPage(orgId: number, since: number, pageSize: number, delaySeconds: number, settled?: number): Promise<NamedRow[]> {
    const complete = settled ?? (await completeBefore(this.db));
    const upper = Math.min(complete, complete - delaySeconds + 1);
    return anchoredPage<NamedRow>(this.db, this.kind, { columns: this.columns, joins: this.decisionJoin, where: () => [], params: [orgId], decisionColumns: DECISION_RECORD }, { since, upper, pageSize });
  }

  /** The feeds' first second not settled yet (a page's exclusive upper bound before any delay). */
  completeBefore(): Promise<number> {
    return completeBefore(this.db);
  }

  /** The record of this id the organization's feed carries: an indicator, or its decision record on a value nobody reported. */
  async byId(orgId: number, id: number): Promise<NamedRow | undefined> {
    const res = await this.db.query<NamedRow>(heldOrDecisionRecord(this.kind, this.select, DECISION_RECORD, { indicator: 'i.id = $2', decision: 'd.id = $2' }), [orgId, id]);
    return res.rows[0];
  }

  /**
   * Rows of organization $1 that follow the score (no decision of its own) and whose live score
   * falls below a threshold at a second in (after, before): `offsets` as decayEndSql takes them.
   */
  async decayingBetween(orgId: number, offsets: readonly number[], after: number, before: number): Promise<NamedRow[]> {
    const end = decayEndSql(EFFECTIVE, '$2');
    const res = await this.db.query<NamedRow>(
      `${this.select} where d.decision is distinct from 0 and d.decision is distinct from 1 and ${end} > ${EFFECTIVE.ts} and ${end} > $3 and ${end} < $4`,
      [orgId, offsets, after, before],
    );
    return res.rows;
  }

  private listSql(filter: ScoreListFilter, after: number | null, upTo: number | null, params: unknown[]): string {
    return scoreListSql(this.kind, `left join ${this.t.decisions} d on d.org_id = $ORG and d.value = i.value`, filter, after, upTo, params, { held: 'i.value', decided: 'd.value' });
  }

  /** Entries of the score list with after < id <= upTo, by id (see scoreListSql for the precedence). */
  listRows(filter: ScoreListFilter, after: number | null, upTo: number | null, limit: number): Promise<Array<{ id: number; value: string }>> {
    const params: unknown[] = [];
    return listRows(this.db, this.listSql(filter, after, upTo, params), params, limit);
  }

  listBoundary(filter: ScoreListFilter, after: number | null, n: number) {
    const params: unknown[] = [];
    return listBoundary(this.db, this.listSql(filter, after, null, params), params, n);
  }

  listVersion(filter: ScoreListFilter, after: number | null, upTo: number | null) {
    const params: unknown[] = [];
    return listVersion(this.db, this.listSql(filter, after, upTo, params), params);
  }

  decisionsVersion(orgId: number): Promise<string> {
    return decisionsVersion(this.db, this.kind, orgId);
  }
}
