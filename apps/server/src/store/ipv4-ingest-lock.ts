import type { QueryResult, Transaction } from './db.ts';
import { IPV4_FEED_LOCK_CLASS } from './ipv4.ts';

/* The first statement of an IPv4 ingest batch (see ingestIpv4Batch): its SQL, its parameters and its answer. */

/** What the lock statement needs of a batch item (an Ipv4ReportItem). */
export interface LockItem {
  orgId: number;
  network: string;
  isNetwork: boolean;
  gid: string;
  ipInfo: Record<string, string> | null;
  addReport: boolean;
  decision: unknown;
}

export interface LockedRow {
  id: number;
  network: string;
  ts: number;
  /** s0 before the batch (1 for a row the batch inserted). */
  score: number;
  /** Report sources before the batch (blocking rules match them). */
  sources: string[];
  /** Inserted by this batch. */
  created: boolean;
  /** Held, and last written by a transaction the lock statement's snapshot saw: its reporters came with it. */
  fresh: boolean;
}

/** An earlier reporter of a held indicator (`id`), or the trust of one of the batch's organizations (`id` null). */
export interface KnownRow {
  id: number | null;
  org_id: number;
  confidence: number | null;
  events: number | null;
  trust: number;
}


export interface LockedRows {
  /** Refused items: index in the batch → the reserved range that covers them. */
  reserved: Map<number, string>;
  /** Every indicator row the batch reports on, locked until the commit. */
  rows: LockedRow[];
  /** The feed clock second taken (and locked) for the batch's ts; null when nothing is reported. */
  clockTs: number | null;
  /** Earlier reporters of the fresh held rows and the trust of the reporting organizations. */
  known: KnownRow[];
}

/** The first statement's answer, as JSON columns. */
interface LockAnswer {
  reserved: Array<{ idx: number; range: string }>;
  held: LockedRow[];
  created: LockedRow[];
  clock_ts: number | null;
  reporters: KnownRow[];
  trust: KnownRow[];
}

/**
 * The reserved-range rule of ingestion, in SQL, for both write paths (this file's lock statement
 * and ipv4-ingest-one.ts): each item (`alias`, numbered by `key`) whose network overlaps one of
 * its organization's reserved_ips, with the first such range; such an item is not stored.
 */
export function reservedSelect(alias: string, key: string): string {
  return `
     select distinct on (${alias}.${key}) ${alias}.${key}, r.value as range
     from ${alias}
     join organization_settings s on s.org_id = ${alias}.org_id
     cross join lateral jsonb_array_elements_text(coalesce(s.document -> 'reserved_ips', '[]'::jsonb)) as r(value)
     where r.value::inet && ${alias}.network::inet
     order by ${alias}.${key}, r.value`;
}

/**
 * The held rows of the `wanted` networks locked FOR UPDATE in network order (the lock order of
 * every write path), each with whether its latest version is visible to the statement's snapshot
 * (`fresh`: its earlier reporters, read by the same statement, are current). Both write paths
 * use it: this file's lock statement and ipv4-ingest-one.ts.
 */
export const HELD_SELECT = `
     select i.id, i.network, i.ts, i.score, i.sources,
       coalesce(pg_visible_in_snapshot(i.change_xid, pg_current_snapshot()), true) as fresh
     from ipv4_indicators i
     where i.network = any (array(select w.network from wanted w))
     order by i.network
     for update of i`;

/**
 * Reserved items, held rows locked FOR UPDATE in network order, missing rows inserted in network
 * order with ts and entry_ts from the feed clock (taken under a shared advisory lock on its
 * second, or `$2` when a previous attempt took it), and the earlier reporters of the fresh held
 * rows with the trust of the reporting organizations, as one row of JSON columns (LockAnswer).
 * `$1` the pending items, `$3` the feed lock class, `$4` whether the batch decides anything.
 */
const LOCK_SQL = `with u as materialized (
     select * from jsonb_to_recordset($1::jsonb)
       as u(idx integer, org_id bigint, network cidr, gid text, is_network boolean, ip_info jsonb, add_report boolean)
   ), reserved as materialized (${reservedSelect('u', 'idx')}
   ), wanted as materialized (
     select distinct on (u.network) u.gid, u.network, u.is_network, u.ip_info
     from u
     where u.add_report and not exists (select 1 from reserved x where x.idx = u.idx)
     order by u.network, u.idx
   ), held as materialized (${HELD_SELECT}
   ), clock as materialized (
     -- The second is locked first, then ts is read from the clock (the target list is
     -- projected once the lateral lock call has returned): ts >= locked second, and a reader
     -- that did not yet see the lock read its clock before ts (Ipv4Store.completeBefore).
     select $2::bigint as ts
     where $2::bigint is not null
     union all
     select floor(extract(epoch from clock_timestamp()))::bigint
     from (select floor(extract(epoch from clock_timestamp()))::bigint as s) as x
     cross join lateral pg_advisory_xact_lock_shared($3::bigint * 4294967296 + x.s) as lock
     where $2::bigint is null and (exists (select 1 from wanted) or $4::boolean)
   ), created as (
     -- The held rows are all locked (the array below is computed once, before the first
     -- insert), then the missing ones are inserted.
     -- A network someone decided on before anyone reported it takes its decision record's
     -- gid (migration 0017): one record per network for every follower.
     insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, ip_info)
     select coalesce((select d.gid from ipv4_decisions d where d.network = w.network order by d.id limit 1), w.gid), w.network, w.is_network, 1, (select ts from clock), (select ts from clock), w.ip_info
     from wanted w
     where w.network <> all (array(select h.network from held h))
     order by w.network
     on conflict (network) do nothing
     returning id, network, ts
   )
   select
     (select coalesce(json_agg(json_build_object('idx', idx, 'range', range)), '[]'::json) from reserved) as reserved,
     (select coalesce(json_agg(json_build_object('id', id, 'network', network::text, 'ts', ts, 'score', score, 'sources', sources, 'created', false, 'fresh', fresh)), '[]'::json) from held) as held,
     (select coalesce(json_agg(json_build_object('id', id, 'network', network::text, 'ts', ts, 'score', 1, 'sources', '{}'::text[], 'created', true, 'fresh', false)), '[]'::json) from created) as created,
     (select ts from clock) as clock_ts,
     (select coalesce(json_agg(json_build_object('id', r.indicator_id, 'org_id', r.org_id, 'confidence', r.confidence, 'events', r.events, 'trust', o.trust)), '[]'::json)
      from held h join ipv4_reports r on r.indicator_id = h.id join organizations o on o.id = r.org_id where h.fresh) as reporters,
     (select coalesce(json_agg(json_build_object('id', null, 'org_id', o.id, 'trust', o.trust)), '[]'::json)
      from organizations o where o.id = any (array(select u.org_id from u where u.add_report))) as trust`;

/**
 * The batch's first statement: finds reserved items, locks the held indicator rows (FOR UPDATE,
 * in network order) and then inserts the missing ones (in network order), with ts and entry_ts
 * from the feed clock, taken under a shared advisory lock on its second. A row inserted by
 * another transaction after this statement's snapshot is neither locked nor inserted here (the
 * insert waits for it and does nothing); such rows, and held rows deleted meanwhile, are taken
 * by running the statement again for them, with the clock already taken.
 *
 * It also reads the earlier reporters of the held rows and the trust of the reporting
 * organizations. Those are read in the statement's snapshot, taken before the row locks, so they
 * are current only for a row whose locked (latest) version was written by a transaction that
 * snapshot saw: every statement that changes an indicator's reports updates the indicator row in
 * the same transaction, and that stamps it with its change_xid (migration 0009). Such rows are
 * `fresh`; the reporters of the others are read again after this statement.
 */
export async function lockIndicators(tx: Transaction, items: LockItem[]): Promise<LockedRows> {
  const taken: LockedRows = { reserved: new Map(), rows: [], clockTs: null, known: [] };
  const locked = new Set<string>();
  // Decisions re-deliver the records they cover (migration 0011) at the batch's second.
  const decides = items.some((item) => item.decision !== null);
  let pending: Array<{ item: LockItem; idx: number }> = items.map((item, idx) => ({ item, idx }));
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt === 10) throw new Error('ipv4 ingest: indicator rows kept changing while the batch locked them');
    const result: QueryResult<LockAnswer> = await tx.query<LockAnswer>(LOCK_SQL, [lockRows(pending), taken.clockTs, IPV4_FEED_LOCK_CLASS, decides], { name: 'rampart_ipv4_ingest_lock' });
    takeAnswer(taken, locked, result.rows[0]!);
    pending = pending.filter(({ item, idx }) => item.addReport && !taken.reserved.has(idx) && !locked.has(item.network));
  }
  return taken;
}

/** The lock statement's `$1`: the pending items as JSON records. */
function lockRows(pending: Array<{ item: LockItem; idx: number }>): string {
  return JSON.stringify(
    pending.map(({ item, idx }) => ({ idx, org_id: item.orgId, network: item.network, gid: item.gid, is_network: item.isNetwork, ip_info: item.ipInfo, add_report: item.addReport })),
  );
}

/** Adds one attempt's answer to what the batch has taken so far (the clock is taken once). */
function takeAnswer(taken: LockedRows, locked: Set<string>, answer: LockAnswer): void {
  for (const x of answer.reserved) taken.reserved.set(x.idx, x.range);
  if (answer.clock_ts !== null) taken.clockTs ??= Number(answer.clock_ts);
  for (const row of [...answer.held, ...answer.created]) {
    taken.rows.push({ id: Number(row.id), network: row.network, ts: Number(row.ts), score: Number(row.score), sources: row.sources, created: row.created, fresh: row.fresh });
    locked.add(row.network);
  }
  taken.known.push(...answer.reporters, ...answer.trust);
}
