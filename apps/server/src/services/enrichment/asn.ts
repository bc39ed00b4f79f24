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

/** One CSV field starting at `i`; quoted fields may hold commas and doubled quotes. */
function field(text: string, i: number, lineEnd: number): [string, number] {
  if (text.charCodeAt(i) !== 34) {
    let comma = text.indexOf(',', i);
    if (comma < 0 || comma > lineEnd) comma = lineEnd;
    return [text.slice(i, comma), comma + 1];
  }
  let out = '';
  let j = i + 1;
  for (;;) {
    const quote = text.indexOf('"', j);
    if (quote < 0 || quote >= lineEnd) throw new Error('unterminated quoted field');
    out += text.slice(j, quote);
    if (text.charCodeAt(quote + 1) === 34) {
      out += '"';
      j = quote + 2;
    } else {
      return [out, quote + 2];
    }
  }
}

/** Parses the ASN table into a range index; ~410k rows in a few hundred ms, ~10 MB. */
export function loadAsnIndex(path: string): Ipv4RangeIndex<AsnEntry> {
  const text = readFileSync(path, 'utf8');
  const starts: number[] = [];
  const ends: number[] = [];
  const values: AsnEntry[] = [];
  // One shared, frozen entry per AS keeps the table small and callers from editing it.
  const byAsn = new Map<number, AsnEntry>();
  let i = 0;
  while (i < text.length) {
    let lineEnd = text.indexOf('\n', i);
    if (lineEnd < 0) lineEnd = text.length;
    const end = text.charCodeAt(lineEnd - 1) === 13 ? lineEnd - 1 : lineEnd;
    if (end > i) {
      let start: string, last: string, asn: string, name: string;
      let p = i;
      [start, p] = field(text, p, end);
      [last, p] = field(text, p, end);
      [asn, p] = field(text, p, end);
      [name] = p <= end ? field(text, p, end) : [''];
      const asnNumber = Number(asn);
      let entry = byAsn.get(asnNumber);
      if (!entry) {
        entry = Object.freeze({ asn: asnNumber, name });
        byAsn.set(asnNumber, entry);
      }
      starts.push(Number(start));
      ends.push(Number(last));
      values.push(entry);
    }
    i = lineEnd + 1;
  }
  return Ipv4RangeIndex.fromSorted(Uint32Array.from(starts), Uint32Array.from(ends), values);
}
