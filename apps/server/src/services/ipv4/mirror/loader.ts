import { decodeRow, ROW_BYTES, type AsInfoRow, type MirrorAnchorRow, type MirrorChanges, type MirrorRowsStore, type MirrorSince } from '../../../store/index.ts';
import { AddressIndex } from './address-index.ts';
import { appendRow, emptyColumns, ensureCapacity, removeRows, trimmed, upsertRows, type ColumnRow, type Columns } from './columns.ts';
import type { MirrorFacts } from './facts.ts';
import type { Anchor } from './listing.ts';
import { AllDecisions } from './org-decisions.ts';

/**
 * Rows per query of the initial load: under 1 MB of packed rows (2 MB as hex text) at a time, so
 * the load leaves little garbage and no large driver buffers behind.
 */
const LOAD_CHUNK = 16_384;

/** Where the mirror reads from (Store.ipv4Mirror). */
export type MirrorRows = Pick<MirrorRowsStore, 'snapshot' | 'chunk' | 'anchors' | 'decisions' | 'changesSince' | 'details'>;

/** Everything the mirror holds, and where its next catch-up starts. */
export interface MirrorTables {
  cols: Columns;
  /** Which rows hold an address (look-ups). */
  index: AddressIndex;
  decisions: AllDecisions;
  /** Anchors by organization, then by indicator id. */
  anchors: Map<number, Map<number, Anchor>>;
  epoch: string;
  since: MirrorSince;
}

function setAnchors(anchors: MirrorTables['anchors'], rows: MirrorAnchorRow[]): void {
  for (const [orgId, id, ts, score] of rows) {
    let org = anchors.get(Number(orgId));
    if (!org) anchors.set(Number(orgId), (org = new Map()));
    org.set(Number(id), { ts: Number(ts), score: Number(score) });
  }
}

/** The packed rows of a catch-up with their AS and CDN facts resolved, one object each. */
function columnRows(packed: Uint8Array, facts: MirrorFacts, infoOf: Map<number, AsInfoRow>): ColumnRow[] {
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  const out: ColumnRow[] = [];
  for (let at = 0; at < packed.byteLength; at += ROW_BYTES) {
    const row = {} as ColumnRow;
    decodeRow(view, at, row);
    row.as = facts.asOf(infoOf.get(row.id), row.addr);
    row.cdn = facts.cdnOf(row.addr);
    out.push(row);
  }
  return out;
}

/** Appends a chunk of the initial load (ids above every held one; AS facts in id order too). */
function appendChunk(cols: Columns, packed: Uint8Array, asInfo: AsInfoRow[] | null, facts: MirrorFacts): void {
  ensureCapacity(cols, cols.n + packed.byteLength / ROW_BYTES);
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  const row = {} as ColumnRow;
  let a = 0;
  for (let at = 0; at < packed.byteLength; at += ROW_BYTES) {
    decodeRow(view, at, row);
    const info = asInfo && a < asInfo.length && Number(asInfo[a]![0]) === row.id ? asInfo[a++] : undefined;
    row.as = facts.asOf(info, row.addr);
    row.cdn = facts.cdnOf(row.addr);
    appendRow(cols, row);
  }
}

/**
 * Reads every row, decision and anchor in chunks (null when `closed` says to stop). Changes
 * made while the chunks are read belong to transactions the snapshot has not seen: the first
 * catch-up (`applyChanges` from `since`) reads them again.
 */
export async function loadTables(rows: MirrorRows, facts: MirrorFacts, closed: () => boolean): Promise<MirrorTables | null> {
  const snap = await rows.snapshot();
  const decisionRows = await rows.decisions();
  const anchorRows = await rows.anchors();
  let cols = emptyColumns(snap.count + (snap.count >> 5) + 1024);
  // The next chunk is asked for before this one is decoded: PostgreSQL packs it while this
  // process decodes (at 10M rows about half the load each; in turn they added up).
  let next = rows.chunk(0, LOAD_CHUNK);
  for (;;) {
    const chunk = await next;
    if (closed()) return null;
    if (chunk.count === 0 || chunk.last === null) break;
    const more = chunk.count === LOAD_CHUNK;
    if (more) {
      next = rows.chunk(chunk.last, LOAD_CHUNK);
      // Awaited at the next turn; a decoding failure below leaves it behind, unawaited.
      next.catch(() => undefined);
    }
    appendChunk(cols, chunk.rows!, chunk.asInfo, facts);
    if (!more) break;
  }
  cols = trimmed(cols);
  const decisions = new AllDecisions();
  for (const d of decisionRows) decisions.set(d);
  const anchors = new Map<number, Map<number, Anchor>>();
  setAnchors(anchors, anchorRows);
  return { cols, index: new AddressIndex(cols), decisions, anchors, epoch: snap.epoch, since: snap.since };
}

/**
 * Applies one catch-up's changes (rows, deletions, decisions, anchors) and moves `since` on.
 * Returns the ids of the indicator rows written or deleted.
 */
export function applyChanges(t: MirrorTables, facts: MirrorFacts, changes: MirrorChanges): number[] {
  const gone = new Set<number>();
  for (const [kind, indicatorId, orgId, network] of changes.deleted ?? []) {
    if (kind === 0) throw new Error('ipv4 list table truncated: the mirror reloads');
    if (kind === 1) gone.add(Number(indicatorId));
    else t.decisions.delete(Number(orgId), network!);
  }
  for (const d of changes.decisions ?? []) t.decisions.set(d);
  setAnchors(t.anchors, changes.anchors ?? []);
  if (gone.size > 0) removeRows(t.cols, gone);
  const touched = [...gone];
  if (changes.rows) {
    const infoOf = new Map<number, AsInfoRow>();
    for (const info of changes.asInfo ?? []) infoOf.set(Number(info[0]), info);
    const rows = columnRows(changes.rows, facts, infoOf);
    for (const row of upsertRows(t.cols, rows)) t.index.add(row.addr, row.len, row.id);
    for (const row of rows) touched.push(row.id);
  }
  // Networks added since the index was built are looked up in a map: past a sixteenth of the
  // rows, one sorted index again.
  if (t.index.added > Math.max(4096, t.cols.n >> 4)) t.index = new AddressIndex(t.cols);
  t.since = changes.since;
  return touched;
}
