import { anchorTs } from '@rampart/scoring';
import type { Queryable } from './db.ts';

/** What one reporting organization contributes to an indicator's score. */
export interface ReportAggregate {
  org_id: number;
  trust: number;
  confidence: number;
  events: number;
}

/** Turns the per-organization aggregates into s0 (the scoring algorithm lives in services). */
export type Scorer = (aggregates: ReportAggregate[]) => number;

export interface ReportOutcome {
  indicatorId: number;
  /** The record's `ts` after the report. */
  ts: number;
  /** True when the reporting organization had not reported this indicator before. */
  newReporter: boolean;
  /** True when the record's `ts` moved: it is delivered again to every follower. */
  moved: boolean;
  score: number;
}

/** Most tags one indicator keeps; reports beyond it add events but no new tags. */
export const MAX_INDICATOR_TAGS = 100;

export function mergeTags(existing: readonly string[], added: readonly string[] | undefined): string[] {
  if (!added || added.length === 0) return [...existing];
  return [...new Set([...existing, ...added])].slice(0, MAX_INDICATOR_TAGS);
}

/**
 * The first second whose records may still be written (an exclusive upper bound for pages).
 * Waiting for the feed clock's lock means every writer that took a `ts` before this call has
 * committed; every later writer gets a `ts` of at least max(now, clock) (same protocol as the
 * IPv4 feed, migration 0002; the clock term covers a clock that ran ahead of this host's time).
 */
export async function completeBefore(db: Queryable): Promise<number> {
  const res = await db.query<{ r: number }>('select floor(extract(epoch from clock_timestamp()))::bigint as r');
  const clock = await db.query<{ ts: number }>('select ts from feed_clock where id = 1 for share');
  return Math.max(res.rows[0]!.r, clock.rows[0]!.ts);
}

/**
 * A `ts` for a record that moves in the feed. Locks the feed clock until the transaction ends;
 * take it as the last lock of a transaction so the clock is held as briefly as possible.
 */
export async function takeFeedTs(tx: Queryable): Promise<number> {
  const res = await tx.query<{ ts: number }>(
    'update feed_clock set ts = greatest(ts, floor(extract(epoch from clock_timestamp()))::bigint) where id = 1 returning ts',
  );
  return res.rows[0]!.ts;
}

/** Larger than any offset `decayOffsets` holds for a score that never decays below its threshold. */
export const NEVER_DECAYS = 2 ** 52;

/**
 * The first second at which the effective pair `e` decays below a threshold, given per score
 * s0 = 0..1000 (array index s0 + 1) the last second after time zero at which its live score is
 * still at or above it (`lastSecondAtOrAbove`, -1 when never, NEVER_DECAYS when always). The
 * offsets are computed by the scoring package, so SQL and the shared formula agree to the second.
 */
export function decayEndSql(e: Effective, offsetsParam: string): string {
  return `(${e.ts} + (${offsetsParam}::bigint[])[least(greatest(${e.score}::integer, 0), 1000) + 1] + 1)`;
}

/** Table names per kind: constants, never input, so they may appear in SQL text. */
export const TABLES = {
  file: { indicators: 'file_indicators', reports: 'file_reports', decisions: 'file_decisions', anchors: 'file_org_anchors' },
  domain: { indicators: 'domain_indicators', reports: 'domain_reports', decisions: 'domain_decisions', anchors: 'domain_org_anchors' },
  url: { indicators: 'url_indicators', reports: 'url_reports', decisions: 'url_decisions', anchors: 'url_org_anchors' },
} as const;

/** Where a row's effective (ts, score) comes from: its own columns or the organization's anchor `a`. */
export interface Effective {
  ts: string;
  score: string;
}
const OWN: Effective = { ts: 'i.ts', score: 'i.score' };
const ANCHORED: Effective = { ts: 'a.ts', score: 'a.score' };
/** With ANCHOR_JOIN: the pair in force for the organization (migration 0011). */
export const EFFECTIVE: Effective = { ts: 'coalesce(a.ts, i.ts)', score: 'coalesce(a.score, i.score)' };

/** Joins alias `a`: the organization's anchor of row `i` while it is newer than the row's own pair. */
export function anchorJoin(kind: IndicatorKind, org: string): string {
  return `left join ${TABLES[kind].anchors} a on a.org_id = ${org} and a.indicator_id = i.id and a.ts > i.ts`;
}

/**
 * Organization `org`'s decision rows of a kind that no indicator holds (migration 0018): each is
 * a record of its own while nobody reports the value. `d` is the decision row.
 */
export function unheldDecisions(kind: IndicatorKind, org: string): string {
  const held =
    kind === 'file'
      ? 'select 1 from file_indicators h where h.md5 = d.digest or h.sha1 = d.digest or h.sha256 = d.digest'
      : `select 1 from ${TABLES[kind].indicators} h where h.value = d.value`;
  return `from ${TABLES[kind].decisions} d where d.org_id = ${org} and not exists (${held})`;
}

/**
 * One record of organization $1: the indicator `select` finds where `indicator` holds, else the
 * organization's decision record (`decisionColumns` read from `d`) where `decision` holds: what
 * its feed carries for a value nobody reported (migration 0018), cleared ones too.
 */
export function heldOrDecisionRecord(kind: IndicatorKind, select: string, decisionColumns: string, where: { indicator: string; decision: string }): string {
  return `select * from ((${select} where ${where.indicator})
    union all (select ${decisionColumns} ${unheldDecisions(kind, '$1')} and ${where.decision})) r limit 1`;
}

/**
 * A feed page of organization $1 over its effective (ts, score) pairs (migration 0011): rows
 * whose own pair is in force and rows the organization's newer anchors re-deliver, each branch
 * read in (ts, id) order, merged. `columns` and `where` are given the branch's pair; `joins` may
 * reference `i` (never `a`). With `decisionColumns`, the organization's decision records on values
 * nobody reported (unheldDecisions) are a third branch, those columns read from `d`. The page never
 * splits a group that shares one `ts`.
 */
export async function anchoredPage<T extends { ts: number; id: number }>(
  db: Queryable,
  kind: IndicatorKind,
  q: { columns: (e: Effective) => string; joins: string; where: (e: Effective) => string[]; params: unknown[]; decisionColumns?: string | undefined },
  range: { since: number; upper: number; pageSize: number },
): Promise<T[]> {
  const t = TABLES[kind];
  const n = q.params.length;
  const sql = (cond: (ts: string, id: string) => string, limit: string) => {
    const extra = (e: Effective) => q.where(e).map((w) => ` and ${w}`).join('');
    const records = q.decisionColumns
      ? `union all
      (select ${q.decisionColumns} ${unheldDecisions(kind, '$1')} and ${cond('d.ts', 'd.id')}
       order by d.ts, d.id limit ${limit})`
      : '';
    return `select * from (
      (select ${q.columns(OWN)} from ${t.indicators} i ${q.joins}
       where ${cond('i.ts', 'i.id')} and not exists (select 1 from ${t.anchors} x where x.org_id = $1 and x.indicator_id = i.id and x.ts > i.ts)${extra(OWN)}
       order by i.ts, i.id limit ${limit})
      union all
      (select ${q.columns(ANCHORED)} from ${t.anchors} a join ${t.indicators} i on i.id = a.indicator_id ${q.joins}
       where a.org_id = $1 and ${cond('a.ts', 'a.indicator_id')} and a.ts > i.ts${extra(ANCHORED)}
       order by a.ts, a.indicator_id limit ${limit})
      ${records}
    ) page order by ts, id limit ${limit}`;
  };
  const page = await db.query<T>(sql((ts) => `${ts} > $${n + 1} and ${ts} < $${n + 2}`, `$${n + 3}`), [...q.params, range.since, range.upper, range.pageSize]);
  const rows = page.rows;
  const last = rows.at(-1);
  if (rows.length === range.pageSize && last) {
    const rest = await db.query<T>(sql((ts, id) => `${ts} = $${n + 1} and ${id} > $${n + 2}`, 'all'), [...q.params, last.ts, last.id]);
    rows.push(...rest.rows);
  }
  return rows;
}

/**
 * Moves organization `orgId`'s decision row on `key` (a value, or a file digest's bytes) to a new
 * feed second: delivered again as a record of its own while nobody reports the value (migration
 * 0018). Takes the feed clock: run it last in the caller's transaction.
 */
/** Moves the decision row's feed second (its record, while nobody reports the value); returns it. */
export async function moveDecision(tx: Queryable, kind: IndicatorKind, orgId: number, key: string | Buffer): Promise<number> {
  const ts = await takeFeedTs(tx);
  await tx.query(`update ${TABLES[kind].decisions} set ts = $3 where org_id = $1 and ${kind === 'file' ? 'digest' : 'value'} = $2`, [orgId, key, ts]);
  return ts;
}

/**
 * Delivers one indicator again to one organization whose decision on it changed (migration
 * 0011): an anchor at a new feed second carrying the live score there, from the pair the
 * organization saw until now. Runs in the caller's transaction, after its other locks. Returns the
 * feed second the organization's record now has (undefined when the indicator is gone).
 */
export async function anchorForOrg(tx: Queryable, kind: IndicatorKind, orgId: number, indicatorId: number, reanchor: (s0: number, elapsed: number) => number): Promise<number | undefined> {
  const t = TABLES[kind];
  const seen = await tx.query<{ ts: number; score: number }>(
    `select ${EFFECTIVE.ts} as ts, ${EFFECTIVE.score} as score from ${t.indicators} i ${anchorJoin(kind, '$1')} where i.id = $2 for share of i`,
    [orgId, indicatorId],
  );
  const row = seen.rows[0];
  if (!row) return undefined;
  const ts = await takeFeedTs(tx);
  if (ts <= Number(row.ts)) return Number(row.ts);
  await tx.query(
    `insert into ${t.anchors} (org_id, indicator_id, ts, score) values ($1, $2, $3, $4)
     on conflict (org_id, indicator_id) do update set ts = excluded.ts, score = excluded.score`,
    [orgId, indicatorId, ts, reanchor(Number(row.score), ts - Number(row.ts))],
  );
  return ts;
}
export type IndicatorKind = keyof typeof TABLES;

/**
 * Merges one report into (indicator, organization) and rescores the indicator: repeats count
 * events and keep the latest confidence; a first report by an organization, or one that changes
 * the score, moves `ts` (the decay anchor and feed cursor). Runs inside the caller's transaction, which already holds
 * the indicator row's lock.
 */
export async function mergeReport(
  tx: Queryable,
  kind: IndicatorKind,
  input: { indicatorId: number; currentTs: number; currentScore: number; orgId: number; confidence: number; nowTs: number },
  scorer: Scorer,
): Promise<{ ts: number; newReporter: boolean; moved: boolean; score: number; members: number; events: number }> {
  const t = TABLES[kind];
  const upsert = await tx.query<{ first: boolean }>(
    `insert into ${t.reports} (indicator_id, org_id, confidence, events, first_ts, last_ts)
     values ($1, $2, $3, 1, $4, $4)
     on conflict (indicator_id, org_id) do update
       set events = ${t.reports}.events + 1, confidence = excluded.confidence, last_ts = excluded.last_ts
     returning (xmax = 0) as first`,
    [input.indicatorId, input.orgId, input.confidence, input.nowTs],
  );
  const aggregates = await reportAggregates(tx, kind, input.indicatorId);
  const score = scorer(aggregates);
  const newReporter = upsert.rows[0]!.first;
  // The shared rule (anchorTs): a new reporter or a changed score delivers the record again.
  const moves = anchorTs(input.currentTs === 0 ? null : input.currentTs, newReporter ? [] : [String(input.orgId)], String(input.orgId), Number.MAX_SAFE_INTEGER, {
    before: input.currentScore,
    after: score,
  }) !== input.currentTs;
  const ts = moves ? await takeFeedTs(tx) : input.currentTs;
  return { ts, newReporter, moved: moves, score, members: aggregates.length, events: aggregates.reduce((n, a) => n + a.events, 0) };
}

export async function reportAggregates(db: Queryable, kind: IndicatorKind, indicatorId: number): Promise<ReportAggregate[]> {
  const t = TABLES[kind];
  const res = await db.query<ReportAggregate>(
    `select r.org_id, o.trust, r.confidence, r.events from ${t.reports} r
     join organizations o on o.id = r.org_id where r.indicator_id = $1 order by r.org_id`,
    [indicatorId],
  );
  return res.rows;
}

/**
 * The caller organization's score list at one instant: `cutoffs[s0 - 1]` is the smallest `ts`
 * at which a record of score s0 still has a live score >= the threshold now (computed by the
 * service with the shared formula, so SQL and `isBlocked` agree).
 */
export interface ScoreListFilter {
  orgId: number;
  cutoffs: number[];
  /** The organization's delay (`visibleUpTo`): records whose ts is later are not listed; null = none. */
  visibleUpTo?: number | null;
}

/** What one score list writes per entry (see scoreListSql). */
export interface ListedValue {
  /** The value of indicator row `i`. */
  held: string;
  /** The value of decision row `d` (migration 0018). */
  decided: string;
  /** Further conditions on `i` and on `d` (a file list's digest kind). */
  heldWhere?: string;
  decidedWhere?: string;
}

/**
 * The SQL twin of `isBlocked` for files, domains and URLs (they carry no ttl and no reserved
 * ranges): whitelist never listed > blacklist always listed > live score >= threshold. A select
 * of the listed entries in (after, upTo] as (id, value, ts): the held indicators, and the
 * organization's blacklists on values nobody reported (unheldDecisions; score 0, the decision
 * row's id and ts). `decisionJoin` must expose `d.decision`. Only parameters are added to `params`.
 */
export function scoreListSql(kind: IndicatorKind, decisionJoin: string, f: ScoreListFilter, after: number | null, upTo: number | null, params: unknown[], value: ListedValue): string {
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const org = p(f.orgId);
  const join = `${decisionJoin.replaceAll('$ORG', org)} ${anchorJoin(kind, org)}`;
  const held = ['coalesce(d.decision, -1) <> 0', `(d.decision = 1 or ${EFFECTIVE.ts} >= (${p(f.cutoffs)}::bigint[])[${EFFECTIVE.score}])`];
  const decided = ['d.decision = 1'];
  if (f.visibleUpTo !== undefined && f.visibleUpTo !== null) {
    const upper = p(f.visibleUpTo);
    held.push(`${EFFECTIVE.ts} <= ${upper}`);
    decided.push(`d.ts <= ${upper}`);
  }
  if (after !== null) {
    const from = p(after);
    held.push(`i.id > ${from}`);
    decided.push(`d.id > ${from}`);
  }
  if (upTo !== null) {
    const to = p(upTo);
    held.push(`i.id <= ${to}`);
    decided.push(`d.id <= ${to}`);
  }
  if (value.heldWhere) held.push(value.heldWhere);
  if (value.decidedWhere) decided.push(value.decidedWhere);
  return `select i.id, ${value.held} as value, ${EFFECTIVE.ts} as ts from ${TABLES[kind].indicators} i ${join} where ${held.join(' and ')}
    union all select d.id, ${value.decided} as value, d.ts ${unheldDecisions(kind, org)} and ${decided.join(' and ')}`;
}

/** Id of the n-th listed entry after `after` (or of the last one) and whether more follow; `listed` as scoreListSql. */
export async function listBoundary(db: Queryable, listed: string, params: unknown[], n: number): Promise<{ last: number | null; more: boolean }> {
  const res = await db.query<{ id: number }>(`select l.id from (${listed}) l order by l.id limit ${Number(n) + 1}`, params);
  const ids = res.rows;
  return { last: ids[Math.min(n, ids.length) - 1]?.id ?? null, more: ids.length > n };
}

/** Count, id sum and latest ts of the listed entries: moves when the entries do. */
export async function listVersion(db: Queryable, listed: string, params: unknown[]): Promise<string> {
  const res = await db.query<{ n: number; s: string; t: string }>(
    `select count(*)::bigint as n, coalesce(sum(l.id), 0)::text as s, coalesce(max(l.ts), 0)::text as t from (${listed}) l`,
    params,
  );
  const r = res.rows[0]!;
  return `${r.n}:${r.s}:${r.t}`;
}

/** The listed entries in (after, upTo], by id, at most `limit`. */
export async function listRows(db: Queryable, listed: string, params: unknown[], limit: number): Promise<Array<{ id: number; value: string }>> {
  const res = await db.query<{ id: number; value: string }>(`select l.id, l.value from (${listed}) l order by l.id limit ${Number(limit)}`, params);
  return res.rows;
}

/** Count and latest change of one organization's decisions of a kind (part of list ETags). */
export async function decisionsVersion(db: Queryable, kind: IndicatorKind, orgId: number): Promise<string> {
  const res = await db.query<{ n: number; u: string }>(
    `select count(*)::bigint as n, coalesce(max(updated_at), 'epoch')::text as u from ${TABLES[kind].decisions} where org_id = $1`,
    [orgId],
  );
  return `${res.rows[0]!.n}:${res.rows[0]!.u}`;
}

/** Why a decision was taken and by whom (issue 37), kept on its row with its last change. */
export interface DecisionNote {
  reason: string | null;
  setBy: string | null;
}
export const NO_NOTE: DecisionNote = { reason: null, setBy: null };
