import ipaddr from 'ipaddr.js';

/*
 * IPv4 ranges as unsigned 32-bit integers, for enforcers whose backends speak in ranges (nft
 * interval sets) or must reason about overlaps. Canonical spelling and order: block-list.ts.
 */

export interface Ipv4Range {
  /** First address as an unsigned 32-bit integer. */
  start: number;
  /** Last address as an unsigned 32-bit integer. */
  end: number;
  prefix: number;
}

function toUint32(octets: number[]): number {
  return ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
}

export function uint32ToIpv4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
}

function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** Parses `a.b.c.d` or `a.b.c.d/n` (strict dotted quad); null when it is not IPv4. */
export function parseIpv4Cidr(input: string): Ipv4Range | null {
  const slash = input.indexOf('/');
  const address = slash === -1 ? input : input.slice(0, slash);
  const lengthText = slash === -1 ? '32' : input.slice(slash + 1);
  if (!/^\d{1,2}$/.test(lengthText) || !ipaddr.IPv4.isValidFourPartDecimal(address)) return null;
  const prefix = Number(lengthText);
  if (prefix > 32) return null;
  const mask = maskOf(prefix);
  const start = (toUint32(ipaddr.IPv4.parse(address).octets) & mask) >>> 0;
  return { start, end: (start | (~mask >>> 0)) >>> 0, prefix };
}

export function formatRange(range: Pick<Ipv4Range, 'start' | 'prefix'>): string {
  return `${uint32ToIpv4(range.start)}/${range.prefix}`;
}

/** Sorts canonical CIDRs in `sortCidrs` order, parsing each once (fast for 100k-entry sets). */
export function sortCidrsFast(cidrs: Iterable<string>): string[] {
  const keyed: { cidr: string; start: number; prefix: number }[] = [];
  for (const cidr of cidrs) {
    const range = parseIpv4Cidr(cidr);
    keyed.push({ cidr, start: range?.start ?? -1, prefix: range?.prefix ?? -1 });
  }
  keyed.sort((a, b) => a.start - b.start || a.prefix - b.prefix);
  return keyed.map((k) => k.cidr);
}

/**
 * Splits an inclusive address range into the fewest CIDR blocks (how a backend that reports
 * ranges, like an nft interval set, is read back as CIDRs).
 */
export function rangeToCidrs(start: number, end: number): string[] {
  const out: string[] = [];
  let cursor = start;
  while (cursor <= end) {
    // Largest block aligned at `cursor` that does not pass `end`.
    let prefix = 32;
    while (prefix > 0) {
      const size = 2 ** (32 - (prefix - 1));
      if (cursor % size !== 0 || cursor + size - 1 > end) break;
      prefix -= 1;
    }
    out.push(formatRange({ start: cursor, prefix }));
    cursor += 2 ** (32 - prefix);
  }
  return out;
}
