import type { WireRow } from '../../../store/index.ts';

/** The columns, in id order; `n` rows are used, the arrays may be longer (room to grow). */
export interface Columns {
  n: number;
  id: Float64Array;
  addr: Uint32Array;
  len: Uint8Array;
  score: Uint16Array;
  /** Seconds since 1970, unsigned: good until 2106 (a signed column broke on 2038-01-19). */
  ts: Uint32Array;
  members: Int32Array;
  events: Int32Array;
  /** updated_at in epoch microseconds. */
  updated: Float64Array;
  /** Index into the interned AS facts (0: none): ip_info's, completed from the offline data. */
  as: Uint32Array;
  /** Index into the CDN names (0: none) of the network's first address. */
  cdn: Uint16Array;
}

/** One row as the columns hold it: the wire row with its AS and CDN indexes resolved. */
export interface ColumnRow extends WireRow {
  as: number;
  cdn: number;
}

const COLUMN_TYPES = {
  id: Float64Array,
  addr: Uint32Array,
  len: Uint8Array,
  score: Uint16Array,
  ts: Uint32Array,
  members: Int32Array,
  events: Int32Array,
  updated: Float64Array,
  as: Uint32Array,
  cdn: Uint16Array,
} as const;
type ColumnName = keyof typeof COLUMN_TYPES;
const COLUMN_NAMES = Object.keys(COLUMN_TYPES) as ColumnName[];

export function emptyColumns(capacity: number): Columns {
  const c = { n: 0 } as Columns;
  for (const name of COLUMN_NAMES) (c as unknown as Record<string, unknown>)[name] = new COLUMN_TYPES[name](capacity);
  return c;
}

/** Bytes held by the columns (the arrays' full capacity). */
export function columnBytes(cols: Columns): number {
  return COLUMN_NAMES.reduce((sum, name) => sum + cols[name].byteLength, 0);
}

/** Columns as long as their rows plus a thirty-second to grow into. */
export function trimmed(cols: Columns): Columns {
  const capacity = cols.n + (cols.n >> 5) + 1024;
  if (cols.id.length <= capacity) return cols;
  const out = emptyColumns(0);
  out.n = cols.n;
  for (const name of COLUMN_NAMES) {
    const grown = new COLUMN_TYPES[name](capacity);
    grown.set(cols[name].subarray(0, cols.n));
    (out as unknown as Record<string, unknown>)[name] = grown;
  }
  return out;
}

/** Room for at least `need` rows. */
export function ensureCapacity(cols: Columns, need: number): void {
  if (cols.id.length >= need) return;
  const capacity = Math.max(need, cols.id.length + (cols.id.length >> 3) + 1024);
  // One column at a time: at most one extra column is held during the copy.
  for (const name of COLUMN_NAMES) {
    const grown = new COLUMN_TYPES[name](capacity);
    grown.set(cols[name].subarray(0, cols.n));
    (cols as unknown as Record<string, unknown>)[name] = grown;
  }
}

export function writeRow(cols: Columns, i: number, row: ColumnRow): void {
  cols.id[i] = row.id;
  cols.addr[i] = row.addr;
  cols.len[i] = row.len;
  cols.score[i] = row.score;
  cols.ts[i] = row.ts;
  cols.members[i] = row.members;
  cols.events[i] = row.events;
  cols.updated[i] = row.updated;
  cols.as[i] = row.as;
  cols.cdn[i] = row.cdn;
}

/** Appends a row whose id is above every held one (the initial load), into room already made (ensureCapacity). */
export function appendRow(cols: Columns, row: ColumnRow): void {
  if (cols.n > 0 && row.id <= cols.id[cols.n - 1]!) throw new Error('ipv4 list mirror rows arrived out of id order');
  writeRow(cols, cols.n++, row);
}

/** Position of the first row with id > key (n when none). */
export function upperBound(cols: Columns, key: number): number {
  const ids = cols.id;
  let lo = 0;
  let hi = cols.n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Position of the row with this id, -1 when none. */
export function positionOf(cols: Columns, id: number): number {
  const i = upperBound(cols, id) - 1;
  return i >= 0 && cols.id[i] === id ? i : -1;
}

/** Position range (after, upTo] of ids. */
export function span(cols: Columns, after: number | null, upTo: number | null): [number, number] {
  return [after === null ? 0 : upperBound(cols, after), upTo === null ? cols.n : upperBound(cols, upTo)];
}

/** Drops the rows with these ids, keeping the order. */
export function removeRows(c: Columns, ids: Set<number>): void {
  let w = 0;
  for (let r = 0; r < c.n; r++) {
    if (ids.has(c.id[r]!)) continue;
    if (w !== r) for (const name of COLUMN_NAMES) c[name][w] = c[name][r]!;
    w++;
  }
  c.n = w;
}

/**
 * Writes each row over the held one of the same id, and merges the others in id order. New ids
 * usually lie above every held one (append); otherwise the columns are merged from the back into
 * room made at the end. Returns the rows whose (id, network) pair was not held before: new ids,
 * and held ids whose network changed (the look-up index adds them).
 */
export function upsertRows(c: Columns, rows: ColumnRow[]): ColumnRow[] {
  const fresh: ColumnRow[] = [];
  const moved: ColumnRow[] = [];
  for (const row of rows) {
    const i = positionOf(c, row.id);
    if (i >= 0) {
      if (c.addr[i] !== row.addr || c.len[i] !== row.len) moved.push(row);
      writeRow(c, i, row);
    } else fresh.push(row);
  }
  if (fresh.length === 0) return moved;
  fresh.sort((a, b) => a.id - b.id);
  ensureCapacity(c, c.n + fresh.length);
  let r = c.n - 1;
  let w = c.n + fresh.length - 1;
  for (let f = fresh.length - 1; f >= 0; f--) {
    const row = fresh[f]!;
    while (r >= 0 && c.id[r]! > row.id) {
      for (const name of COLUMN_NAMES) c[name][w] = c[name][r]!;
      r--;
      w--;
    }
    writeRow(c, w, row);
    w--;
  }
  c.n += fresh.length;
  return moved.length === 0 ? fresh : [...fresh, ...moved];
}
