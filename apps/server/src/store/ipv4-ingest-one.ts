import type { Db, Queryable } from './db.ts';
import { IPV4_FEED_LOCK_CLASS } from './ipv4.ts';
import { HELD_SELECT, reservedSelect } from './ipv4-ingest-lock.ts';
import type { IngestOptions, IngestResult, IngestRules, Ipv4ReportItem, Ipv4ReportOutcome } from './ipv4-ingest.ts';

/*
 * A batch of plain reports in ONE statement, committed on its own (issue 35 item 5): the same
 * rows, scores, clock and outcomes as ingestIpv4Batch, in one round trip instead of four (BEGIN,
 * lock statement, write statement, COMMIT) plus a notification transaction. Scoring v3.2 runs
 * in SQL from the tables of scoreV32Tables (@rampart/scoring), so every score is the one
 * scoreV32 gives; the feed_changed notification is stored and sent by the same statement, so it
 * goes out with the commit.
 *
 * The statement sees one snapshot. Where that is not enough it fails on purpose
 * (RETRY_MARK), which rolls it back whole, and the batch runs as the multi-statement transaction
 * instead: a held row whose latest version was written after the snapshot (its earlier reporters
 * were read too early), or a new row that another transaction inserted meanwhile (neither
 * locked nor inserted here). Batches with decisions, whitelists or all-or-nothing groups take
 * that transaction directly.
 */

/** The message part by which a statement that must run as the transaction is told from a failure. */
export const RETRY_MARK = 'rampart_ipv4_ingest_retry';

/** The feed_changed event's payload as services/events.ts publishes it (`JSON.stringify`), ts appended by SQL. */
const FEED_CHANGED_HEAD = '{"type":"feed_changed","org_id":null,"kind":"ipv4","ts":';

export interface OneStatementOptions extends IngestOptions {
  /** PostgreSQL: the notification channel to store and send the batch's feed_changed on (migration 0012's store_notifications). */
  notifyChannel?: string;
}

/** One organization's reports on one network in the batch, merged (as ingestIpv4Batch merges them). */
interface Contribution {
  k: number;
  org_id: number;
  network: string;
  gid: string;
  is_network: boolean;
  ip_info: Record<string, string> | null;
  events: number;
  confidence: number;
  /** Distinct, sorted as JavaScript sorts. */
  sources: string[];
  notes: string[];
}

interface Answer {
  reserved: Array<{ k: number; range: string }>;
  stored: Array<{ network: string; created: boolean; ts: number }>;
  clock_ts: number | null;
  moved: boolean;
  notified: number;
}

/** Whether a batch can run as one statement: plain reports only, scored by rules that give SQL tables. */
export function oneStatementFits(items: Ipv4ReportItem[], rules: IngestRules, options: IngestOptions): boolean {
  return !options.allOrNothing && rules.sqlTables !== undefined && items.length > 0 && items.every((item) => item.addReport && item.decision === null);
}

/**
 * Runs the batch as one statement. Returns null when the statement found what it cannot handle
 * (and so changed nothing): the caller runs the transaction. `notified`: the feed_changed of the
 * batch was sent with the commit.
 */
export async function ingestIpv4OneStatement(db: Db, items: Ipv4ReportItem[], rules: IngestRules, nowSeconds: number, options: OneStatementOptions): Promise<(IngestResult & { notified: boolean }) | null> {
  const byPair = new Map<string, Contribution>();
  const pairOf: Contribution[] = [];
  for (const item of items) {
    const key = `${item.network} ${item.orgId}`;
    let c = byPair.get(key);
    if (!c) {
      c = { k: byPair.size, org_id: item.orgId, network: item.network, gid: item.gid, is_network: item.isNetwork, ip_info: item.ipInfo, events: 0, confidence: 0, sources: [], notes: [] };
      byPair.set(key, c);
    }
    c.events += 1;
    c.confidence = item.confidence;
    if (!c.sources.includes(item.source)) c.sources.push(item.source);
    if (item.notes) c.notes.push(item.notes);
    pairOf.push(c);
  }
  const contributions = [...byPair.values()].map((c) => ({ ...c, sources: [...c.sources].sort() }));
  const params = [JSON.stringify(contributions), IPV4_FEED_LOCK_CLASS, nowSeconds, options.notifyChannel ?? null];
  const run = (q: Queryable) => q.query<Answer>(oneStatementSql(rules), params, { name: 'rampart_ipv4_ingest_one' });
  let answer: Answer;
  try {
    // PostgreSQL commits the statement on its own; PGlite's acknowledged commit is its transaction's (fsync).
    const res = db.kind === 'postgres' ? await run(db) : await db.transaction((tx) => run(tx));
    answer = res.rows[0]!;
  } catch (err) {
    if (err instanceof Error && err.message.includes(RETRY_MARK)) return null;
    throw err;
  }
  const reserved = new Map(answer.reserved.map((r) => [r.k, r.range]));
  const stored = new Map(answer.stored.map((s) => [s.network, s]));
  const outcomes: Ipv4ReportOutcome[] = pairOf.map((c) => {
    const range = reserved.get(c.k);
    if (range !== undefined) return { status: 'reserved', range };
    const s = stored.get(c.network)!;
    return { status: 'stored', created: s.created, indicatorTs: Number(s.ts) };
  });
  const feedTs = answer.moved && answer.clock_ts !== null ? Number(answer.clock_ts) : null;
  return { outcomes, feedTs, decisions: [], notified: Number(answer.notified) > 0 };
}

const sqlByTables = new WeakMap<object, string>();

/** The statement, with the rules' score tables written into it (one text per rules, prepared once per connection). */
function oneStatementSql(rules: IngestRules): string {
  const tables = rules.sqlTables!;
  let sql = sqlByTables.get(tables);
  if (!sql) {
    sql = ONE_STATEMENT_SQL.replace('$REPEAT', `'{${tables.repeatFactors.join(',')}}'::float8[]`).replace('$THRESHOLDS', `'{${tables.thresholds.join(',')}}'::bigint[]`);
    sqlByTables.set(tables, sql);
  }
  return sql;
}

/** Math.round of a non-negative float8 (PostgreSQL's round() takes half to even). */
const jsRound = (x: string) => `(floor(${x}) + case when ${x} - floor(${x}) >= 0.5 then 1 else 0 end)::bigint`;
/**
 * scoreV32's clamp to 0..1 (NaN as 0), with values under 1e-150 as 0: PostgreSQL refuses a float8
 * product that underflows (trust × a confidence of 5e-324 is "value out of range: underflow"),
 * and a base under 1e-150 is 0 in millionths either way (scoreV32 rounds base × 1e6), so the
 * scores stay scoreV32's.
 */
const unit = (x: string) => `(case when ${x} >= 1e-150::float8 and ${x} <> 'NaN'::float8 then least(${x}, 1::float8) else 0::float8 end)`;

/**
 * `$1` the batch's contributions (Contribution), `$2` the feed lock class, `$3` the reports' ts,
 * `$4` the notification channel or null. The held rows are locked FOR UPDATE in network order,
 * then the missing ones inserted in network order with their final figures (a row inserted by
 * this statement cannot be updated by it), then the report rows written in (indicator,
 * organization) order: the lock order of ingestIpv4Batch. `retry` fails the statement
 * (RETRY_MARK) when a held row is not fresh or a new row was not inserted.
 */
const ONE_STATEMENT_SQL = `with c as materialized (
     select * from jsonb_to_recordset($1::jsonb)
       as c(k integer, org_id bigint, network cidr, gid text, is_network boolean, ip_info jsonb, events integer, confidence double precision, sources text[], notes text[])
   ), reserved as materialized (${reservedSelect('c', 'k')}
   ), acc as materialized (
     select c.* from c where not exists (select 1 from reserved x where x.k = c.k)
   ), wanted as materialized (
     select distinct on (a.network) a.gid, a.network, a.is_network, a.ip_info from acc a order by a.network, a.k
   ), held as materialized (${HELD_SELECT}
   ), clock as materialized (
     -- The second is locked first, then ts is read from the clock (see ipv4-ingest-lock.ts).
     select floor(extract(epoch from clock_timestamp()))::bigint as ts
     from (select floor(extract(epoch from clock_timestamp()))::bigint as s) as x
     cross join lateral pg_advisory_xact_lock_shared($2::bigint * 4294967296 + x.s) as lock
     where exists (select 1 from wanted)
   ), prev as materialized (
     -- Earlier reporters of the held rows, as the snapshot saw them (current for fresh rows).
     select r.indicator_id as id, r.org_id, r.confidence, r.events, o.trust
     from held h join ipv4_reports r on r.indicator_id = h.id join organizations o on o.id = r.org_id
   ), contrib as materialized (
     select a.k, a.network, a.org_id, a.confidence, a.events as added, a.sources, a.notes, h.id as held_id,
       coalesce(o.trust, 0::float8) as trust, coalesce(p.events, 0) + a.events as events, p.org_id is not null as known
     from acc a
     left join held h on h.network = a.network
     left join organizations o on o.id = a.org_id
     left join prev p on p.id = h.id and p.org_id = a.org_id
   ), aggs as (
     -- Every reporter of each network after the batch: scoreV32's terms, in millionths.
     select z.network, z.events, ${jsRound('z.base_m')} as base_micros, ${jsRound('z.repeat_m')} as repeat_micros
     from (
       select x.network, x.events, x.base * 1000000::float8 as base_m,
         x.base * ($REPEAT)[least(greatest(x.events, 1), 16) + 1] * 1000000::float8 as repeat_m
       from (
         select y.network, y.events, ${unit('y.trust')} * ${unit('y.confidence')} as base
         from (
           select c.network, c.trust, c.confidence, c.events from contrib c
           union all
           select h.network, p.trust, p.confidence, p.events from held h join prev p on p.id = h.id
           where not exists (select 1 from contrib c where c.held_id = h.id and c.org_id = p.org_id)
         ) as y
       ) as x
     ) as z
   ), scored as materialized (
     select s.network, s.members, s.events, s.score, h.id, h.ts,
       h.id is null or s.score <> h.score
         or exists (select 1 from contrib c where c.network = s.network and not c.known)
         or exists (select 1 from contrib c cross join unnest(c.sources) as src where c.network = s.network and not (src = any (h.sources))) as reanchor,
       array(select src from contrib c cross join unnest(c.sources) as src where c.network = s.network order by c.k) as sources,
       array(select n.note from contrib c cross join unnest(c.notes) with ordinality as n(note, o) where c.network = s.network order by c.k, n.o) as notes
     from (
       select a.network, count(*)::integer as members, sum(a.events)::integer as events,
         1 + width_bucket((sum(a.base_micros) + sum(a.repeat_micros))::bigint, $THRESHOLDS) as score
       from aggs a group by a.network
     ) as s
     left join held h on h.network = s.network
   ), created as (
     -- A network someone decided on before anyone reported it takes its decision record's gid.
     insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events, sources, notes, ip_info)
     select coalesce((select d.gid from ipv4_decisions d where d.network = w.network order by d.id limit 1), w.gid), w.network, w.is_network,
       s.score, (select ts from clock), (select ts from clock), s.members, s.events,
       array(select distinct x from unnest(s.sources) as x order by x limit 32),
       s.notes[greatest(1, cardinality(s.notes) - 19):], w.ip_info
     from wanted w join scored s on s.network = w.network
     where w.network <> all (array(select h.network from held h))
     order by w.network
     on conflict (network) do nothing
     returning id, network
   ), reports as (
     insert into ipv4_reports (indicator_id, org_id, confidence, events, first_ts, last_ts, sources)
     select coalesce(c.held_id, n.id), c.org_id, c.confidence, c.added, $3::bigint, $3::bigint, c.sources
     from contrib c left join created n on n.network = c.network
     where coalesce(c.held_id, n.id) is not null
     order by coalesce(c.held_id, n.id), c.org_id
     on conflict (indicator_id, org_id) do update set
       confidence = excluded.confidence,
       events = ipv4_reports.events + excluded.events,
       last_ts = excluded.last_ts,
       sources = array(select distinct s from unnest(ipv4_reports.sources || excluded.sources) as s order by s limit 32)
     returning 1
   ), updated as (
     update ipv4_indicators i set
       score = s.score,
       ts = case when s.reanchor then greatest(i.ts, (select ts from clock)) else i.ts end,
       members = s.members,
       events = s.events,
       sources = array(select distinct x from unnest(i.sources || s.sources) as x order by x limit 32),
       notes = (i.notes || s.notes)[greatest(1, cardinality(i.notes || s.notes) - 19):],
       updated_at = now()
     from scored s
     where s.id is not null and i.id = s.id
     returning 1
   ), notice as (
     insert into store_notifications (channel, payload)
     select $4::text, '${FEED_CHANGED_HEAD}' || (select ts from clock) || '}'
     where $4::text is not null and exists (select 1 from scored where reanchor)
     returning id, channel, payload
   )
   select
     case when exists (select 1 from held where not fresh)
       or (select count(*) from wanted) <> (select count(*) from held) + (select count(*) from created)
       then ('${RETRY_MARK} ' || (select count(*) from wanted))::integer end as retry,
     (select coalesce(json_agg(json_build_object('k', k, 'range', range)), '[]'::json) from reserved) as reserved,
     (select coalesce(json_agg(json_build_object('network', s.network::text, 'created', s.id is null,
        'ts', case when s.id is null then (select ts from clock) when s.reanchor then greatest(s.ts, (select ts from clock)) else s.ts end)), '[]'::json)
      from scored s) as stored,
     (select ts from clock) as clock_ts,
     exists (select 1 from scored where reanchor) as moved,
     (select count(*) from (select pg_notify(n.channel, n.id || ' ' || n.payload) from notice n) as sent) as notified`;
