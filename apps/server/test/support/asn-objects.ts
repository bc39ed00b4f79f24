// The ASN table loader as it was before its AS table became columns (one frozen object per AS):
// kept as the oracle of test/enrichment-compact.test.ts.
import { closeSync, openSync, readSync } from 'node:fs';
import type { AsnEntry } from '../../src/services/enrichment/asn.ts';
import { Ipv4RangeIndex } from '../../src/services/enrichment/range-index.ts';

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
 * Parses the ASN table (~410k rows) from bytes read 1 MB at a time into typed arrays: a range is
 * its start, end and the index of its AS in a table of distinct entries (one name string per AS),
 * so the loaded table costs the arrays (~5 MB) and ~80k small entries, and no copy of the file.
 */
export function loadAsnIndexAsObjects(path: string): Ipv4RangeIndex<AsnEntry> {
  const columns = new Columns();
  // One shared, frozen entry per AS keeps the table small and callers from editing it.
  const table: AsnEntry[] = [];
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
      id = table.push(Object.freeze({ asn, name: fields.pos < end ? name(buf, fields.pos, end) : '' })) - 1;
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
  return Ipv4RangeIndex.fromSortedIds(columns.starts.subarray(0, columns.n), columns.ends.subarray(0, columns.n), columns.ids.subarray(0, columns.n), table);
}
