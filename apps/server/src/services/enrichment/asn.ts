import { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ipv4RangeIndex } from './range-index.ts';

export interface AsnEntry {
  readonly asn: number;
  readonly name: string;
}

const require = createRequire(import.meta.url);

/** `asn-ipv4-num.csv` of @ip-location-db/asn (start,end,asn,name; numeric, sorted, disjoint). */
export function defaultAsnCsvPath(): string {
  return require.resolve('@ip-location-db/asn/asn-ipv4-num.csv');
}

/** Reads comma-separated decimal fields of a buffer; no allocation per field (400k rows × 3). */
class FieldReader {
  pos = 0;
  constructor(private readonly buf: Buffer) {}

  /** The unsigned integer at `pos`; `pos` moves past the comma after it. */
  digits(): number {
    const buf = this.buf;
    let i = this.pos;
    let n = 0;
    let c = buf[i]!;
    while (c >= 48 && c <= 57) {
      n = n * 10 + (c - 48);
      c = buf[++i]!;
    }
    this.pos = i + 1;
    return n;
  }
}

/** The name field from `i` to the end of the line: plain, or quoted with doubled quotes. */
function name(buf: Buffer, i: number, end: number): string {
  if (buf[i] !== 34) return buf.toString('utf8', i, end);
  const last = buf[end - 1] === 34 ? end - 1 : end;
  return buf.toString('utf8', i + 1, last).replaceAll('""', '"');
}

/** Bytes read at a time: the 21 MB table is never held whole (a transient buffer that size stays in RSS). */
const CHUNK = 1 << 20;

/** Growable typed columns of the table being read. */
class Columns {
  starts = new Uint32Array(1 << 19);
  ends = new Uint32Array(1 << 19);
  ids = new Uint32Array(1 << 19);
  n = 0;

  push(start: number, end: number, id: number): void {
    if (this.n === this.starts.length) {
      const grow = (a: Uint32Array) => {
        const b = new Uint32Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.starts = grow(this.starts);
      this.ends = grow(this.ends);
      this.ids = grow(this.ids);
    }
    this.starts[this.n] = start;
    this.ends[this.n] = end;
    this.ids[this.n] = id;
    this.n++;
  }
}

/**
 * The distinct ASes of the table as columns: AS numbers in a Uint32Array, names as UTF-8 in one
 * buffer with their offsets, so 80k ASes cost ~2.5 MB of bytes and no JavaScript object or
 * string each; an entry is made when asked for (a small frozen object, equal in value every time).
 */
class AsTable {
  private asns = new Uint32Array(1 << 17);
  /** Name k is bytes [offsets[k], offsets[k + 1]) of `names`. */
  private offsets = new Uint32Array((1 << 17) + 1);
  private names = Buffer.allocUnsafe(1 << 21);
  length = 0;

  add(asn: number, name: string): number {
    const k = this.length;
    if (k + 1 >= this.asns.length) {
      const grow = <T extends Uint32Array>(a: T, n: number) => {
        const b = new Uint32Array(n);
        b.set(a);
        return b;
      };
      this.asns = grow(this.asns, this.asns.length * 2);
      this.offsets = grow(this.offsets, this.offsets.length * 2);
    }
    const at = this.offsets[k]!;
    const bytes = Buffer.byteLength(name);
    if (at + bytes > this.names.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.names.length * 2, at + bytes));
      this.names.copy(bigger, 0, 0, at);
      this.names = bigger;
    }
    this.names.write(name, at);
    this.asns[k] = asn;
    this.offsets[k + 1] = at + bytes;
    this.length = k + 1;
    return k;
  }

  /** Copies the columns to their final lengths. */
  seal(): this {
    const end = this.offsets[this.length]!;
    this.asns = this.asns.slice(0, this.length);
    this.offsets = this.offsets.slice(0, this.length + 1);
    this.names = Buffer.from(this.names.subarray(0, end));
    return this;
  }

  at(k: number): AsnEntry | undefined {
    if (!(k >= 0 && k < this.length)) return undefined;
    return Object.freeze({ asn: this.asns[k]!, name: this.names.toString('utf8', this.offsets[k]!, this.offsets[k + 1]!) });
  }
}

/**
 * Parses the ASN table (~410k rows) from bytes read 1 MB at a time into typed arrays: a range is
 * its start, end and the index of its AS in the table of distinct ASes (AsTable, also columns),
 * so the loaded table costs ~5 MB of range arrays and ~2.5 MB of AS columns, and no copy of the file.
 */
export function loadAsnIndex(path: string): Ipv4RangeIndex<AsnEntry> {
  const columns = new Columns();
  const table = new AsTable();
  const idOf = new Map<number, number>();
  const parseLine = (fields: FieldReader, buf: Buffer, i: number, end: number) => {
    if (end > i && buf[end - 1] === 13) end--;
    if (end <= i) return;
    fields.pos = i;
    const start = fields.digits();
    const last = fields.digits();
    const asn = fields.digits();
    let id = idOf.get(asn);
    if (id === undefined) {
      id = table.add(asn, fields.pos < end ? name(buf, fields.pos, end) : '');
      idOf.set(asn, id);
    }
    columns.push(start, last, id);
  };
  const fd = openSync(path, 'r');
  try {
    let buf = Buffer.allocUnsafe(CHUNK);
    // Bytes of a line that began in the previous chunk sit at the front of `buf`.
    let carried = 0;
    for (;;) {
      if (carried === buf.length) {
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, carried);
        buf = bigger;
      }
      const fields = new FieldReader(buf);
      const read = readSync(fd, buf, carried, buf.length - carried, null);
      const size = carried + read;
      let i = 0;
      for (let nl = buf.indexOf(10, i); nl >= 0 && nl < size; nl = buf.indexOf(10, i)) {
        parseLine(fields, buf, i, nl);
        i = nl + 1;
      }
      if (read === 0) {
        // The last line, without its newline.
        if (i < size) parseLine(fields, buf, i, size);
        break;
      }
      buf.copy(buf, 0, i, size);
      carried = size - i;
    }
  } finally {
    closeSync(fd);
  }
  return Ipv4RangeIndex.fromSortedIds(columns.starts.subarray(0, columns.n), columns.ends.subarray(0, columns.n), columns.ids.subarray(0, columns.n), table.seal());
}
