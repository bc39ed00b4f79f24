import ipaddr from 'ipaddr.js';
import type { CdnRecord } from '@rampart/contracts';
import type { CdnDataFile } from './cdn-data.ts';
import { parseIpv4, parseIpv4Address } from '@rampart/contracts';
import { Ipv4RangeIndex } from './range-index.ts';

/** "Is this address in a well-known CDN, which one": IPv4 by binary search, IPv6 by a short scan. */
export class CdnIndex {
  private readonly v4: Ipv4RangeIndex<string>;
  private readonly v6: Array<{ range: [ipaddr.IPv6, number]; name: string }>;
  private readonly hostingAsns: ReadonlyMap<number, string>;
  readonly list: CdnRecord[];
  readonly date: string;

  constructor(data: CdnDataFile) {
    const v4: Array<{ start: number; end: number; value: string }> = [];
    this.v6 = [];
    for (const provider of data.providers) {
      for (const address of provider.addresses) {
        const range = parseIpv4(address);
        if (range) {
          v4.push({ start: range.start, end: range.end, value: provider.name });
          continue;
        }
        const [addr, bits] = address.includes('/') ? ipaddr.parseCIDR(address) : [ipaddr.parse(address), 128];
        if (addr.kind() === 'ipv6') this.v6.push({ range: [addr as ipaddr.IPv6, bits], name: provider.name });
      }
    }
    // Longest prefix first, so the most specific IPv6 range wins as it does for IPv4.
    this.v6.sort((a, b) => b.range[1] - a.range[1]);
    this.v4 = Ipv4RangeIndex.fromNested(v4);
    this.list = data.providers.map((p) => ({ name: p.name, addresses: [...p.addresses] }));
    this.hostingAsns = new Map(Object.entries(data.hosting_asns.asns).map(([asn, name]) => [Number(asn), name]));
    this.date = data.date;
  }

  /** The CDN whose published ranges hold `ip` (IPv4 or IPv6), or null. */
  cdnOf(ip: string): string | null {
    const n = parseIpv4Address(ip);
    if (n !== undefined) return this.cdnOfIpv4(n);
    if (!ipaddr.IPv6.isValid(ip)) return null;
    const addr = ipaddr.IPv6.parse(ip);
    if (addr.isIPv4MappedAddress()) return this.cdnOf(addr.toIPv4Address().toString());
    return this.v6.find((r) => addr.match(r.range))?.name ?? null;
  }

  /** The CDN whose published ranges hold the IPv4 address `n` (unsigned 32-bit), or null. */
  cdnOfIpv4(n: number): string | null {
    return this.v4.find(n) ?? null;
  }

  /** The cloud or hosting operator an AS number belongs to, or null. */
  hostingOperator(asn: number): string | null {
    return this.hostingAsns.get(asn) ?? null;
  }
}
