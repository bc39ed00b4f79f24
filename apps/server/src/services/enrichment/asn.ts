import { readFileSync } from 'node:fs';
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

/** Parses a decimal unsigned integer of `buf` from `i` up to the next comma. */
function digits(buf: Buffer, i: number): [number, number] {
  let n = 0;
  let c = buf[i]!;
  while (c >= 48 && c <= 57) {
    n = n * 10 + (c - 48);
    c = buf[++i]!;
  }
  return [n, i + 1];
}

/** The name field from `i` to the end of the line: plain, or quoted with doubled quotes. */
function name(buf: Buffer, i: number, end: number): string {
  if (buf[i] !== 34) return buf.toString('utf8', i, end);
  const last = buf[end - 1] === 34 ? end - 1 : end;
  return buf.toString('utf8', i + 1, last).replaceAll('""', '"');
}

/**
 * Parses the ASN table (~410k rows) straight from bytes into typed arrays: no per-row strings
 * except one name per distinct AS, so loading costs ~0.2 s and little more than the arrays.
 */
export function loadAsnIndex(path: string): Ipv4RangeIndex<AsnEntry> {
  const buf = readFileSync(path);
  let rows = 0;
  for (let i = 0; i < buf.length; i++) if (buf[i] === 10) rows++;
  if (buf.length > 0 && buf[buf.length - 1] !== 10) rows++;
  const starts = new Uint32Array(rows);
  const ends = new Uint32Array(rows);
  const values = new Array<AsnEntry>(rows);
  // One shared, frozen entry per AS keeps the table small and callers from editing it.
  const byAsn = new Map<number, AsnEntry>();
  let n = 0;
  let i = 0;
  while (i < buf.length) {
    let lineEnd = buf.indexOf(10, i);
    if (lineEnd < 0) lineEnd = buf.length;
    const end = buf[lineEnd - 1] === 13 ? lineEnd - 1 : lineEnd;
    if (end > i) {
      let p = i;
      let start: number, last: number, asn: number;
      [start, p] = digits(buf, p);
      [last, p] = digits(buf, p);
      [asn, p] = digits(buf, p);
      let entry = byAsn.get(asn);
      if (!entry) {
        entry = Object.freeze({ asn, name: p < end ? name(buf, p, end) : '' });
        byAsn.set(asn, entry);
      }
      starts[n] = start;
      ends[n] = last;
      values[n] = entry;
      n++;
    }
    i = lineEnd + 1;
  }
  values.length = n;
  return Ipv4RangeIndex.fromSorted(starts.subarray(0, n), ends.subarray(0, n), values);
}
