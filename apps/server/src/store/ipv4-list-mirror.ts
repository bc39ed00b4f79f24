import type { Db } from './db.ts';

/**
 * The SQL of the in-process IPv4 list mirror (services/ipv4/mirror/); change tracking is in
 * migration 0009. Indicator rows travel packed in PostgreSQL's binary send formats, ROW_BYTES
 * big-endian bytes per row (id int8, network cidr_send: family, bits, is_cidr, length, 4 address
 * bytes; score int2, ts int8, members int4, events int4, updated_at timestamptz_send: µs since
 * 2000-01-01), so a million rows cost a few buffers instead of a million driver objects. The
 * aggregate keeps the subquery's id order in practice; the reader checks it.
 */
export const ROW_BYTES = 42;

/** One decoded packed row: the columns the mirror holds, before its AS and CDN facts. */
export interface WireRow {
  id: number;
  addr: number;
  len: number;
  score: number;
  ts: number;
  members: number;
  events: number;
  /** updated_at in epoch microseconds. */
  updated: number;
}

/** timestamptz_send counts microseconds from 2000-01-01. */
const PG_EPOCH_MICROS = 946_684_800_000_000;
const TWO_32 = 4_294_967_296;

/**
 * Decodes the packed row at byte `at` into `out` (layout above); throws on what the mirror
 * cannot hold: a non-IPv4 network, a ts outside 0..2^32-1 (the column is unsigned 32-bit: good
 * until 2106).
 */
export function decodeRow(view: DataView, at: number, out: WireRow): void {
  out.id = view.getInt32(at) * TWO_32 + view.getUint32(at + 4);
  // cidr_send: family (2 = IPv4), bits, is_cidr, address length.
  if (view.getUint8(at + 8) !== 2 || view.getUint8(at + 11) !== 4) throw new Error('ipv4_indicators holds a non-IPv4 network: lists read SQL');
  out.len = view.getUint8(at + 9);
  out.addr = view.getUint32(at + 12);
  out.score = view.getInt16(at + 16);
  const tsHigh = view.getInt32(at + 18);
  out.ts = tsHigh * TWO_32 + view.getUint32(at + 22);
  if (out.ts < 0 || out.ts > 0xffff_ffff) throw new Error(`ipv4 indicator ts ${out.ts} does not fit the mirror: lists read SQL`);
  out.members = view.getInt32(at + 26);
  out.events = view.getInt32(at + 30);
  out.updated = view.getInt32(at + 34) * TWO_32 + view.getUint32(at + 38) + PG_EPOCH_MICROS;
}

const PACKED = `int8send(i.id) || cidr_send(i.network) || int2send(i.score::int2) || int8send(i.ts)
  || int4send(i.members) || int4send(i.events) || timestamptz_send(i.updated_at)`;

/** AS facts of the rows that carry some (ip_info), as [id, as_name, asn]. */
const AS_INFO = `json_agg(json_build_array(i.id, i.ip_info ->> 'as_name', i.ip_info ->> 'asn') order by i.id)
  filter (where i.ip_info ->> 'as_name' <> '' or i.ip_info ->> 'asn' <> '')`;

export type AsInfoRow = [number, string | null, string | null];

export interface PackedRows {
  /** ROW_BYTES per row (in id order for a chunk, in any order for changes); null when there is none. */
  rows: Uint8Array | null;
  asInfo: AsInfoRow[] | null;
}

export interface MirrorDecisionRow {
  org_id: number;
  network: string;
  decision: number;
  ttl: number | null;
  micros: number;
  /** updated_at as text, as `decisionsVersion` shows it. */
  changed: string;
}

/**
 * What a snapshot had not seen yet: transactions from `xmax` on, and those in progress (`xip`).
 * A catch-up from it reads exactly the rows those transactions wrote, so a transaction left open
 * for hours (in any database of the cluster) costs nothing but one entry of `xip`.
 */
export interface MirrorSince {
  xmax: string;
  xip: string[];
}

/** The current snapshot's MirrorSince, as columns `xmax` and `xip`. */
const SINCE_NOW = `pg_snapshot_xmax(pg_current_snapshot())::text as xmax,
  coalesce((select array_agg(x::text) from pg_snapshot_xip(pg_current_snapshot()) as x), '{}') as xip`;

/** Rows of alias `t` written by a transaction MirrorSince ($1, $2) had not seen. */
const UNSEEN = (t: string) => `(${t}.change_xid >= $1::xid8 or ${t}.change_xid = any($2::xid8[]))`;

/** An organization's anchor of an indicator (migration 0011): [org_id, indicator_id, ts, score]. */
export type MirrorAnchorRow = [number, number, number, number];

export interface MirrorChanges extends PackedRows {
  /** What the statement's snapshot had not seen: the next catch-up starts there. */
  since: MirrorSince;
  decisions: MirrorDecisionRow[] | null;
  anchors: MirrorAnchorRow[] | null;
  /** [kind, indicator_id, org_id, network]: see ipv4_list_deletions. */
  deleted: Array<[number, number | null, number | null, string | null]> | null;
}

const DECISION_JSON = `json_build_object('org_id', d.org_id, 'network', d.network::text, 'decision', d.decision, 'ttl', d.ttl,
  'micros', (extract(epoch from d.updated_at) * 1000000)::bigint, 'changed', d.updated_at::text)`;

/** Rows come back as Buffer (pg) or Uint8Array (PGlite); both are Uint8Array. */
function bytes(value: unknown): Uint8Array | null {
  return value instanceof Uint8Array ? value : null;
}

/** What the current snapshot has not seen, and the row count to size the columns. */
export async function mirrorSnapshot(db: Db): Promise<{ since: MirrorSince; epoch: string; count: number }> {
  const res = await db.query<MirrorSince & { epoch: string; count: number }>(
    `select ${SINCE_NOW}, 'epoch'::timestamptz::text as epoch, (select count(*) from ipv4_indicators)::integer as count`,
  );
  const r = res.rows[0]!;
  return { since: { xmax: r.xmax, xip: r.xip }, epoch: r.epoch, count: r.count };
}

/** Up to `limit` indicator rows with id > after, packed. */
export async function mirrorChunk(db: Db, after: number, limit: number): Promise<PackedRows & { count: number; last: number | null }> {
  const res = await db.query<{ count: number; last: number | null; rows: unknown; as_info: AsInfoRow[] | null }>(
    `select count(*)::integer as count, max(i.id) as last, string_agg(${PACKED}, ''::bytea) as rows, ${AS_INFO} as as_info
     from (select * from ipv4_indicators where id > $1 order by id limit $2) i`,
    [after, limit],
  );
  const r = res.rows[0]!;
  return { count: r.count, last: r.last === null ? null : Number(r.last), rows: bytes(r.rows), asInfo: r.as_info };
}

const ANCHOR_JSON = `json_build_array(a.org_id, a.indicator_id, a.ts, a.score)`;

/** Every anchor of every organization. */
export async function mirrorAnchors(db: Db): Promise<MirrorAnchorRow[]> {
  const res = await db.query<{ a: MirrorAnchorRow[] | null }>(`select json_agg(${ANCHOR_JSON}) as a from ipv4_org_anchors a`);
  return res.rows[0]!.a ?? [];
}

/** Every decision of every organization. */
export async function mirrorDecisions(db: Db): Promise<MirrorDecisionRow[]> {
  const res = await db.query<{ d: MirrorDecisionRow }>(`select ${DECISION_JSON} as d from ipv4_decisions d`);
  return res.rows.map((r) => r.d);
}

/**
 * Everything written by the transactions `since` had not seen that are visible now, in ONE
 * statement (one snapshot): changed indicators, changed decisions, deletions, and what this
 * snapshot has not seen in turn.
 */
export async function mirrorChangesSince(db: Db, since: MirrorSince): Promise<MirrorChanges> {
  const res = await db.query<
    MirrorSince & { rows: unknown; as_info: AsInfoRow[] | null; decisions: MirrorDecisionRow[] | null; anchors: MirrorAnchorRow[] | null; deleted: MirrorChanges['deleted'] }
  >(
    `select ${SINCE_NOW}, c.rows, c.as_info,
       (select json_agg(${DECISION_JSON}) from ipv4_decisions d where ${UNSEEN('d')}) as decisions,
       (select json_agg(${ANCHOR_JSON}) from ipv4_org_anchors a where ${UNSEEN('a')}) as anchors,
       (select json_agg(json_build_array(x.kind, x.indicator_id, x.org_id, x.network::text)) from ipv4_list_deletions x where ${UNSEEN('x')}) as deleted
     from (select string_agg(${PACKED}, ''::bytea) as rows, ${AS_INFO} as as_info
           from ipv4_indicators i where ${UNSEEN('i')}) c`,
    [since.xmax, since.xip],
    // Before every list request: parsed and planned once per connection.
    { name: 'ipv4_mirror_changes' },
  );
  const r = res.rows[0]!;
  return { since: { xmax: r.xmax, xip: r.xip }, rows: bytes(r.rows), asInfo: r.as_info, decisions: r.decisions, anchors: r.anchors, deleted: r.deleted };
}

/** What a look-up's record holds beside the mirror's columns (services/ipv4/lookup.ts). */
export interface MirrorDetailRow {
  id: number;
  gid: string;
  is_network: boolean;
  entry_ts: number;
  sources: string[];
  notes: string[];
  tags: string[];
  ip_info: Record<string, string> | null;
}

/** The detail columns of these indicators, in the order of `ids` (null: no such indicator now). */
export async function mirrorDetails(db: Db, ids: readonly number[]): Promise<Array<MirrorDetailRow | null>> {
  const res = await db.query<MirrorDetailRow>(
    'select id, gid, is_network, entry_ts, sources, notes, tags, ip_info from ipv4_indicators where id = any($1::bigint[])',
    [ids],
    { name: 'ipv4_mirror_details' },
  );
  const byId = new Map(res.rows.map((r) => [Number(r.id), r]));
  return ids.map((id) => byId.get(id) ?? null);
}

/** The mirror's reads, bound to one database (Store.ipv4Mirror): the mirror never holds the handle. */
export class MirrorRowsStore {
  constructor(private readonly db: Db) {}
  snapshot = () => mirrorSnapshot(this.db);
  chunk = (after: number, limit: number) => mirrorChunk(this.db, after, limit);
  anchors = () => mirrorAnchors(this.db);
  decisions = () => mirrorDecisions(this.db);
  changesSince = (since: MirrorSince) => mirrorChangesSince(this.db, since);
  details = (ids: readonly number[]) => mirrorDetails(this.db, ids);
}
