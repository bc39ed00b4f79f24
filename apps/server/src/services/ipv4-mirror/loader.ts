import { decodeRow, ROW_BYTES, type AsInfoRow, type MirrorAnchorRow, type MirrorChanges, type MirrorRowsStore, type MirrorSince } from '../../store/index.ts';
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
export type MirrorRows = Pick<MirrorRowsStore, 'snapshot' | 'chunk' | 'anchors' | 'decisions' | 'changesSince'>;

/** Everything the mirror holds, and where its next catch-up starts. */
export interface MirrorTables {
  cols: Columns;
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

/**
 * The packed rows with their AS and CDN facts resolved, each handed to `take`: one reused object
 * (`fresh` false: `take` copies it into the columns) or a new one per row.
 */
function columnRows(packed: Uint8Array, facts: MirrorFacts, infoOf: (id: number) => AsInfoRow | undefined, take: (row: ColumnRow) => void, fresh: boolean): void {
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  let row = {} as ColumnRow;
  for (let at = 0; at < packed.byteLength; at += ROW_BYTES) {
    if (fresh) row = {} as ColumnRow;
    decodeRow(view, at, row);
    row.as = facts.asOf(infoOf(row.id), row.addr);
    row.cdn = facts.cdnOf(row.addr);
    take(row);
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
  let after = 0;
  for (;;) {
    if (closed()) return null;
    const chunk = await rows.chunk(after, LOAD_CHUNK);
    if (chunk.count === 0 || chunk.last === null) break;
    ensureCapacity(cols, cols.n + chunk.count);
    // AS facts come in id order, as the rows do: walked alongside.
    const asInfo = chunk.asInfo ?? [];
    let a = 0;
    const infoOf = (id: number) => (a < asInfo.length && Number(asInfo[a]![0]) === id ? asInfo[a++] : undefined);
    columnRows(chunk.rows!, facts, infoOf, (row) => appendRow(cols, row), false);
    after = chunk.last;
    if (chunk.count < LOAD_CHUNK) break;
  }
  cols = trimmed(cols);
  const decisions = new AllDecisions();
  for (const d of decisionRows) decisions.set(d);
  const anchors = new Map<number, Map<number, Anchor>>();
  setAnchors(anchors, anchorRows);
  return { cols, decisions, anchors, epoch: snap.epoch, since: snap.since };
}

/** Applies one catch-up's changes (rows, deletions, decisions, anchors) and moves `since` on. */
export function applyChanges(t: MirrorTables, facts: MirrorFacts, changes: MirrorChanges): void {
  const gone = new Set<number>();
  for (const [kind, indicatorId, orgId, network] of changes.deleted ?? []) {
    if (kind === 0) throw new Error('ipv4 list table truncated: the mirror reloads');
    if (kind === 1) gone.add(Number(indicatorId));
    else t.decisions.delete(Number(orgId), network!);
  }
  for (const d of changes.decisions ?? []) t.decisions.set(d);
  setAnchors(t.anchors, changes.anchors ?? []);
  if (gone.size > 0) removeRows(t.cols, gone);
  if (changes.rows) {
    const infoOf = new Map<number, AsInfoRow>();
    for (const info of changes.asInfo ?? []) infoOf.set(Number(info[0]), info);
    const fresh: ColumnRow[] = [];
    columnRows(changes.rows, facts, (id) => infoOf.get(id), (row) => fresh.push(row), true);
    upsertRows(t.cols, fresh);
  }
  t.since = changes.since;
}
