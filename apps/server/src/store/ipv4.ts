import type { Db } from './db.ts';
import { decayEndSql } from './indicator-sql.ts';

/**
 * Advisory lock space of IPv4 feed writers: the 64-bit key IPV4_FEED_LOCK_CLASS × 2^32 + second
 * shows in pg_locks as classid = IPV4_FEED_LOCK_CLASS, objid = second.
 */
export const IPV4_FEED_LOCK_CLASS = 7301;

export interface Ipv4Row {
  id: number;
  gid: string;
  network: string;
  is_network: boolean;
  score: number;
  ts: number;
  entry_ts: number;
  members: number;
  events: number;
  sources: string[];
  notes: string[];
  tags: string[];
  ip_info: Record<string, string> | null;
  decision: number | null;
  ttl: number | null;
}

/**
 * The record as organization $1 sees it: its anchor (migration 0011) replaces the indicator's own
 * (ts, score) while it is newer, and its most specific decision is joined.
 */
const SELECT = `select i.id, i.gid, i.network::text as network, i.is_network, coalesce(a.score, i.score) as score,
  coalesce(a.ts, i.ts) as ts, i.entry_ts, i.members, i.events, i.sources, i.notes, i.tags, i.ip_info, d.decision, d.ttl
  from ipv4_indicators i
  left join ipv4_org_anchors a on a.org_id = $1 and a.indicator_id = i.id and a.ts > i.ts
  left join lateral (
    select decision, ttl from ipv4_decisions
    where org_id = $1 and network >>= i.network
    order by masklen(network) desc limit 1
  ) d on true`;

/**
 * Ids and effective `ts` of organization $1's feed rows matching `cond` (over `ts` and `id`):
 * indicators whose own pair is in force, and the organization's newer anchors. Each branch reads
 * its (ts, id) index in order; `limit` bounds both.
 */
function feedKeys(cond: (ts: string, id: string) => string, limit: string): string {
  return `select k.id, k.ts from (
    (select i.id, i.ts from ipv4_indicators i
     where ${cond('i.ts', 'i.id')}
       and not exists (select 1 from ipv4_org_anchors x where x.org_id = $1 and x.indicator_id = i.id and x.ts > i.ts)
     order by i.ts, i.id limit ${limit})
    union all
    (select x.indicator_id, x.ts from ipv4_org_anchors x join ipv4_indicators i on i.id = x.indicator_id
     where x.org_id = $1 and ${cond('x.ts', 'x.indicator_id')} and x.ts > i.ts
     order by x.ts, x.indicator_id limit ${limit})
  ) k order by k.ts, k.id limit ${limit}`;
}

/**
 * Organization $1's decisions on values nobody reported, as records (migration 0017): score 0,
 * the decision row's own id, gid and ts; `decision` 0 or 1 as stored, null once cleared (-1).
 * Callers add conditions after this `where`.
 */
export const DECISION_RECORD = `select d.id, d.gid, d.network::text as network, masklen(d.network) < 32 as is_network, 0 as score,
  d.ts, d.ts as entry_ts, 0 as members, 0 as events, '{}'::text[] as sources, '{}'::text[] as notes, '{}'::text[] as tags,
  null::jsonb as ip_info, case when d.decision in (0, 1) then d.decision end as decision, case when d.decision = 1 then d.ttl end as ttl
  from ipv4_decisions d
  where d.org_id = $1 and not exists (select 1 from ipv4_indicators h where h.network = d.network)`;

const FEED_PAGE = `select * from (
  (${SELECT} join (${feedKeys((ts) => `${ts} > $2 and ${ts} < $3`, '$4')}) k on k.id = i.id)
  union all
  (${DECISION_RECORD} and d.ts > $2 and d.ts < $3 order by d.ts, d.id limit $4)
) r order by r.ts, r.id limit $4`;
const FEED_GROUP_REST = `select * from (
  (${SELECT} join (${feedKeys((ts, id) => `${ts} = $2 and ${id} > $3`, 'all')}) k on k.id = i.id)
  union all
  (${DECISION_RECORD} and d.ts = $2 and d.id > $3)
) r order by r.id`;

export class Ipv4Store {
  constructor(private readonly db: Db) {}

  /**
   * The first second whose records may still be written: every IPv4 writer that gives records a
   * `ts` holds a shared advisory lock on the second it read before choosing it (see
   * ipv4-ingest.ts), from then until its commit. Reading the clock first and the held locks second
   * means a writer either shows its lock here (and nothing at or after its second is read) or
   * locked after the clock was read (and writes at or after this second). Readers never wait.
   */
  async completeBefore(): Promise<number> {
    const now = await this.db.query<{ r: number }>('select floor(extract(epoch from clock_timestamp()))::bigint as r');
    const held = await this.db.query<{ ts: number | null }>(
      `select min(objid::bigint) as ts from pg_locks
       where locktype = 'advisory' and classid = $1 and objsubid = 1
         and database = (select oid from pg_database where datname = current_database())`,
      [IPV4_FEED_LOCK_CLASS],
    );
    const r = now.rows[0]!.r;
    const inFlight = held.rows[0]!.ts;
    return inFlight === null ? r : Math.min(r, Number(inFlight));
  }

  /**
   * One page of the `/ips` feed: records with `ts` > since, by (ts, id), never splitting a
   * group that shares one `ts`, and only records at least `delaySeconds` old.
   */
  async feedPage(orgId: number, since: number, pageSize: number, delaySeconds: number, settled?: number): Promise<Ipv4Row[]> {
    const complete = settled ?? (await this.completeBefore());
    const upper = Math.min(complete, complete - delaySeconds + 1);
    const page = await this.db.query<Ipv4Row>(FEED_PAGE, [orgId, since, upper, pageSize]);
    const rows = page.rows;
    const last = rows.at(-1);
    if (rows.length === pageSize && last) {
      const rest = await this.db.query<Ipv4Row>(FEED_GROUP_REST, [orgId, last.ts, last.id]);
      rows.push(...rest.rows);
    }
    return rows;
  }

  /** A record as organization $1 sees it, by its id. */
  async byId(orgId: number, id: number): Promise<Ipv4Row | undefined> {
    const res = await this.db.query<Ipv4Row>(`${SELECT} where i.id = $2`, [orgId, id]);
    return res.rows[0];
  }

  /**
   * Candidates for an end of validity in (after, before) for organization $1: rows whose live
   * score falls below a threshold then (`offsets`, as decayEndSql takes them; `ruleOffsets` the
   * same for a blocking rule's score), or whose most specific decision's ttl ends then. The
   * caller decides exactly with the organization's whole precedence (reserved ranges, rule tags).
   */
  async decayingBetween(orgId: number, offsets: readonly number[], ruleOffsets: readonly number[] | null, after: number, before: number): Promise<Ipv4Row[]> {
    const e = { ts: 'coalesce(a.ts, i.ts)', score: 'coalesce(a.score, i.score)' };
    const within = (end: string) => `(${end} > $3 and ${end} < $4)`;
    const ends = [within(decayEndSql(e, '$2')), within('d.ttl'), ...(ruleOffsets ? [within(decayEndSql(e, '$5'))] : [])];
    const res = await this.db.query<Ipv4Row>(`${SELECT} where d.decision is distinct from 0 and (${ends.join(' or ')})`, [orgId, offsets, after, before, ...(ruleOffsets ? [ruleOffsets] : [])]);
    return res.rows;
  }

  /** Records that hold `ip`: the address itself and every network containing it, most specific first. */
  async holding(orgId: number, ip: string): Promise<Ipv4Row[]> {
    const res = await this.db.query<Ipv4Row>(
      `select * from ((${SELECT} where i.network >>= $2::cidr) union all (${DECISION_RECORD} and d.network >>= $2::cidr and d.decision in (0, 1))) r
       order by masklen(r.network::cidr) desc, r.id`,
      [orgId, `${ip}/32`],
    );
    return res.rows;
  }

  /** The ids of the indicators held for these canonical networks (`203.0.113.7/32`), by network text. */
  async indicatorIds(networks: readonly string[]): Promise<Map<string, number>> {
    if (networks.length === 0) return new Map();
    const res = await this.db.query<{ id: number; network: string }>(
      'select id, network::text as network from ipv4_indicators where network = any($1::cidr[])',
      [[...new Set(networks)]],
    );
    return new Map(res.rows.map((r) => [r.network, Number(r.id)]));
  }

  /** What each reporting organization contributes to an indicator's score (for `explain=yes`). */
  async reporters(indicatorId: number): Promise<Array<{ org_id: number; trust: number; confidence: number; events: number }>> {
    const res = await this.db.query<{ org_id: number; trust: number; confidence: number; events: number }>(
      `select r.org_id, o.trust, r.confidence, r.events from ipv4_reports r join organizations o on o.id = r.org_id
       where r.indicator_id = $1 order by r.org_id`,
      [indicatorId],
    );
    return res.rows;
  }

  /** Changes whenever one of the organization's decisions does (part of list ETags). */
  async decisionsVersion(orgId: number): Promise<{ count: number; changed: string }> {
    const res = await this.db.query<{ count: number; changed: string }>(
      `select count(*)::integer as count, coalesce(max(updated_at), 'epoch')::text as changed from ipv4_decisions where org_id = $1`,
      [orgId],
    );
    return res.rows[0]!;
  }

  /** `columns: 'address'` reads only what an address list needs (no JSON to decode per row). */
  async listRows(filter: Ipv4ListFilter, after: number | null, upTo: number | null, limit: number, columns: 'all' | 'address' = 'all'): Promise<Ipv4ListRow[]> {
    const params: unknown[] = [];
    const listed = listedSql(filter, after, upTo, params);
    const select =
      columns === 'address'
        ? 'l.id, l.network::text as network'
        : 'l.id, l.network::text as network, l.score, l.ts, l.members, l.events, floor(extract(epoch from l.updated_at))::bigint as updated, l.ip_info';
    const res = await this.db.query<Ipv4ListRow>(`select ${select} from (${listed}) l order by l.id limit ${Number(limit)}`, params);
    return res.rows;
  }

  /**
   * The same rows (the same list rule, `listedSql`) with what decides how long each stays listed:
   * the organization's anchor, its decision, and the tags and sources a blocking rule matches.
   */
  async listDecisionRows(filter: Ipv4ListFilter, after: number | null, limit: number): Promise<Ipv4DecisionRow[]> {
    const params: unknown[] = [];
    const listed = listedSql(filter, after, null, params);
    const select = 'l.id, l.network::text as network, l.score, l.ts, l.sources, l.tags, l.decision, l.ttl';
    const res = await this.db.query<Ipv4DecisionRow>(`select ${select} from (${listed}) l order by l.id limit ${Number(limit)}`, params);
    return res.rows;
  }

  /**
   * Id of the n-th listed row after `after` (or of the last one), whether more follow, and the
   * version of the rows up to it (as `listVersion` would compute it, from the same scan).
   */
  async listBoundary(filter: Ipv4ListFilter, after: number | null, n: number): Promise<{ last: number | null; more: boolean; version: string }> {
    const params: unknown[] = [];
    const listed = listedSql(filter, after, null, params);
    const res = await this.db.query<{ id: number; u: number }>(
      `select l.id, (extract(epoch from l.updated_at) * 1000000)::bigint as u from (${listed}) l order by l.id limit ${Number(n) + 1}`,
      params,
    );
    const page = res.rows.slice(0, n);
    let sum = 0n;
    let changed = 0;
    for (const r of page) {
      sum += BigInt(r.id);
      if (r.u > changed) changed = r.u;
    }
    return { last: page.at(-1)?.id ?? null, more: res.rows.length > n, version: versionText(page.length, sum.toString(), changed) };
  }

  /** Count, id sum and last change of the listed rows in (after, upTo]: moves when the entries do. */
  async listVersion(filter: Ipv4ListFilter, after: number | null, upTo: number | null): Promise<string> {
    const params: unknown[] = [];
    const listed = listedSql(filter, after, upTo, params);
    const res = await this.db.query<{ n: number; s: string; u: number | null }>(
      `select count(*)::bigint as n, coalesce(sum(l.id), 0)::text as s, (max(extract(epoch from l.updated_at)) * 1000000)::bigint as u
       from (${listed}) l`,
      params,
    );
    const r = res.rows[0]!;
    return versionText(Number(r.n), r.s, r.u ?? 0);
  }
}

function versionText(count: number, idSum: string, changedMicros: number): string {
  return `${count}:${idSum}:${changedMicros}`;
}

/** One row of a plain-text IPv4 list. */
export interface Ipv4ListRow {
  id: number;
  network: string;
  score: number;
  ts: number;
  members: number;
  events: number;
  updated: number;
  ip_info: Record<string, string> | null;
}

/** One listed row with what decides how long it stays listed (`listDecisionRows`). */
export interface Ipv4DecisionRow {
  id: number;
  network: string;
  score: number;
  ts: number;
  sources: string[];
  tags: string[];
  decision: number | null;
  ttl: number | null;
}

/**
 * What makes a row blockable for one organization at one instant, already reduced to numbers
 * by the service (so SQL and the shared `isBlocked` agree exactly): `cutoffs[s0 - 1]` is the
 * smallest `ts` at which a record of score s0 still has a live score >= the threshold now.
 */
export interface Ipv4ListFilter {
  orgId: number;
  now: number;
  cutoffs: number[];
  /** The organization's reserved_ips; overlapping rows are never listed. */
  reserved: string[];
  /** blocking_roule: rows carrying one of the tags (or sources) whose ts >= ruleCutoffs[s0 - 1]. */
  rule: { tags: string[]; cutoffs: number[] } | null;
  /** false lets the query skip the per-row decision look-up. */
  hasDecisions: boolean;
  /** The organization's delay (`visibleUpTo`): rows whose ts is later are not listed; null = none. */
  visibleUpTo?: number | null;
}

/**
 * Every entry of one organization's list in (after, upTo], as rows (id, network, score, ts,
 * members, events, updated_at, ip_info, sources, tags, decision, ttl): the held indicators `listWhere` selects, and the
 * organization's blacklists in force on values nobody reported (migration 0017: score 0, the
 * decision row's id), which an exact decision always governs. Only parameters are added to `params`.
 */
function listedSql(f: Ipv4ListFilter, after: number | null, upTo: number | null, params: unknown[]): string {
  const decision = f.hasDecisions ? 'd.decision, d.ttl' : 'null::smallint as decision, null::bigint as ttl';
  const held = `select i.id, i.network, coalesce(a.score, i.score) as score, coalesce(a.ts, i.ts) as ts, i.members, i.events, i.updated_at, i.ip_info,
      i.sources, i.tags, ${decision}
    from ipv4_indicators i ${listWhere(f, after, upTo, params)}`;
  if (!f.hasDecisions) return held;
  const p = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const conditions = [
    `d.org_id = ${p(f.orgId)}`,
    'd.decision = 1',
    `(d.ttl is null or d.ttl > ${p(f.now)})`,
    'not exists (select 1 from ipv4_indicators h where h.network = d.network)',
  ];
  if (after !== null) conditions.push(`d.id > ${p(after)}`);
  if (upTo !== null) conditions.push(`d.id <= ${p(upTo)}`);
  if (f.reserved.length > 0) conditions.push(`not (d.network::inet && any(${p(f.reserved)}::inet[]))`);
  if (f.visibleUpTo !== undefined && f.visibleUpTo !== null) conditions.push(`d.ts <= ${p(f.visibleUpTo)}`);
  return `${held} union all
    select d.id, d.network, 0, d.ts, 0, 0, d.updated_at, null::jsonb, '{}'::text[], '{}'::text[], d.decision, d.ttl from ipv4_decisions d where ${conditions.join(' and ')}`;
}

/**
 * The SQL twin of `isBlocked` (packages/scoring): reserved > whitelist > blacklist until ttl >
 * live score >= threshold > blocking rule. Only parameters are added to `params`.
 */
function listWhere(f: Ipv4ListFilter, after: number | null, upTo: number | null, params: unknown[]): string {
  const p = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const conditions: string[] = [];
  if (after !== null) conditions.push(`i.id > ${p(after)}`);
  if (upTo !== null) conditions.push(`i.id <= ${p(upTo)}`);
  if (f.reserved.length > 0) conditions.push(`not (i.network::inet && any(${p(f.reserved)}::inet[]))`);
  // The organization's anchor (migration 0011) replaces the row's (ts, score) while newer.
  const anchors = `left join ipv4_org_anchors a on a.org_id = ${p(f.orgId)} and a.indicator_id = i.id and a.ts > i.ts`;
  const ts = 'coalesce(a.ts, i.ts)';
  const score = 'coalesce(a.score, i.score)';
  if (f.visibleUpTo !== undefined && f.visibleUpTo !== null) conditions.push(`${ts} <= ${p(f.visibleUpTo)}`);
  const byScore = [`${ts} >= (${p(f.cutoffs)}::bigint[])[${score}]`];
  if (f.rule && f.rule.tags.length > 0) {
    const tags = p(f.rule.tags);
    byScore.push(`((i.tags && ${tags}::text[] or i.sources && ${tags}::text[]) and ${ts} >= (${p(f.rule.cutoffs)}::bigint[])[${score}])`);
  }
  let join = anchors;
  if (f.hasDecisions) {
    join += ` left join lateral (
      select decision, ttl from ipv4_decisions
      where org_id = ${p(f.orgId)} and network >>= i.network
      order by masklen(network) desc limit 1
    ) d on true`;
    conditions.push(`coalesce(d.decision, -1) <> 0`);
    byScore.unshift(`(d.decision = 1 and (d.ttl is null or d.ttl > ${p(f.now)}))`);
  }
  conditions.push(`(${byScore.join(' or ')})`);
  return `${join} where ${conditions.join(' and ')}`;
}
