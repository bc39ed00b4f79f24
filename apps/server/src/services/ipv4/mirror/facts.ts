import type { AsInfoRow } from '../../../store/index.ts';
import type { Enrichment } from '../../enrichment/enrichment.ts';
import { asCsv, asFacts, cdnCsv } from '../csv.ts';
import type { ByteWriter } from '../../list-bytes.ts';

/** The offline facts a `/flat` CSV line holds beside ip_info's: `Enrichment`'s numeric look-ups. */
export type OfflineFacts = Pick<Enrichment, 'asnOfNumber' | 'cdnOfNumber'>;

/** A copy of `a` with room for at least `need` elements (doubling). */
function grow<T extends Uint8Array | Uint32Array>(a: T, need: number): T {
  const out = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2));
  out.set(a);
  return out;
}

/**
 * Interned CSV texts, written side by side in one arena: copying from it stays within a few
 * cache lines.
 */
class CsvInterned {
  private arena = new Uint8Array(1024);
  /** Text k at [bounds[2k], bounds[2k + 1]). */
  private bounds = new Uint32Array(128);
  private readonly index = new Map<string, number>();

  /** Index of `csv`, added the first time. */
  intern(csv: string): number {
    let k = this.index.get(csv);
    if (k === undefined) {
      k = this.index.size;
      this.add(k, Buffer.from(csv));
      this.index.set(csv, k);
    }
    return k;
  }

  private add(k: number, bytes: Uint8Array): void {
    const start = k === 0 ? 0 : this.bounds[2 * k - 1]!;
    if (2 * k + 2 > this.bounds.length) this.bounds = grow(this.bounds, 2 * k + 2);
    if (start + bytes.length > this.arena.length) this.arena = grow(this.arena, start + bytes.length);
    this.arena.set(bytes, start);
    this.bounds[2 * k] = start;
    this.bounds[2 * k + 1] = start + bytes.length;
  }

  /** Writes text k. */
  write(w: ByteWriter, k: number): void {
    w.range(this.arena, this.bounds[2 * k]!, this.bounds[2 * k + 1]!);
  }
}

/**
 * The AS and CDN fields of the mirror's rows, interned once as the CSV writes them
 * (services/ipv4/csv.ts), so a list never looks an address up: AS facts index 0 is none
 * (`AS name,ASN` empty), CDN index 0 is none (`,,false`).
 */
export class MirrorFacts {
  private readonly asFacts = new CsvInterned();
  /** The AS facts index of each offline entry (by AS number: entries are made per look-up), for rows without ip_info. */
  private readonly offlineAs = new Map<number, number>();
  private readonly cdnNames = new CsvInterned();

  constructor(private readonly offline: OfflineFacts) {
    this.asFacts.intern(asCsv('', ''));
    this.cdnNames.intern(cdnCsv(null));
  }

  /** The AS facts of a row: ip_info's, each missing one from the offline entry of its first address. */
  asOf(info: AsInfoRow | undefined, addr: number): number {
    const ipName = info?.[1] ?? '';
    const ipAsn = info?.[2] ?? '';
    if (!ipName && !ipAsn) {
      // The common case (no ip_info): one interned text per offline entry.
      const entry = this.offline.asnOfNumber(addr);
      if (!entry) return 0;
      let k = this.offlineAs.get(entry.asn);
      if (k === undefined) this.offlineAs.set(entry.asn, (k = this.asFacts.intern(asCsv(entry.name, `AS${entry.asn}`))));
      return k;
    }
    const { name, asn } = asFacts(ipName, ipAsn, () => this.offline.asnOfNumber(addr));
    return this.asFacts.intern(asCsv(name, asn));
  }

  cdnOf(addr: number): number {
    const name = this.offline.cdnOfNumber(addr);
    if (!name) return 0;
    const k = this.cdnNames.intern(cdnCsv(name));
    // The column holds 16 bits: a mirror that cannot tell its CDNs apart fails over to SQL.
    if (k > 0xffff) throw new Error('more CDN names than the ipv4 list mirror holds: lists read SQL');
    return k;
  }

  writeAs(w: ByteWriter, k: number): void {
    this.asFacts.write(w, k);
  }

  writeCdn(w: ByteWriter, k: number): void {
    this.cdnNames.write(w, k);
  }
}
