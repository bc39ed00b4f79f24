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

export function uint32ToIpv4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
}

function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/**
 * Parses `a.b.c.d` or `a.b.c.d/n` (strict dotted quad: decimal, no leading zeros, nothing
 * around it) into `network * 64 + prefix` (host bits cleared), or -1 when it is not IPv4. A
 * number, not an object: enforcers parse 100,000 entries per full sync, and neither a regex, a
 * general library nor an allocation per entry fits in the backend's own load time.
 */
export function packIpv4Cidr(input: string): number {
  const n = input.length;
  let value = 0;
  let i = 0;
  for (let octet = 0; octet < 4; octet += 1) {
    const first = i;
    let part = 0;
    while (i < n && i - first < 3) {
      const c = input.charCodeAt(i);
      if (c < 48 || c > 57) break;
      part = part * 10 + (c - 48);
      i += 1;
    }
    if (i === first || part > 255 || (i - first > 1 && input.charCodeAt(first) === 48)) return -1;
    value = value * 256 + part;
    if (octet < 3) {
      if (input.charCodeAt(i) !== 46) return -1;
      i += 1;
    }
  }
  let prefix = 32;
  if (i < n) {
    if (input.charCodeAt(i) !== 47 || n - i < 2 || n - i > 3) return -1;
    const d1 = input.charCodeAt(i + 1) - 48;
    const d2 = n - i === 3 ? input.charCodeAt(i + 2) - 48 : -1;
    if (d1 < 0 || d1 > 9 || (d2 !== -1 && (d2 < 0 || d2 > 9 || d1 === 0))) return -1;
    prefix = d2 === -1 ? d1 : d1 * 10 + d2;
    if (prefix > 32) return -1;
  }
  return ((value & maskOf(prefix)) >>> 0) * 64 + prefix;
}

/** Like `packIpv4Cidr`, as a range; null when it is not IPv4. */
export function parseIpv4Cidr(input: string): Ipv4Range | null {
  const packed = packIpv4Cidr(input);
  if (packed < 0) return null;
  const prefix = packed % 64;
  const start = (packed - prefix) / 64;
  return { start, end: (start | (~maskOf(prefix) >>> 0)) >>> 0, prefix };
}

/** Canonical CIDR (`network/len`) of a strict IPv4 address or network; null when not IPv4. */
export function canonicalIpv4Cidr(input: string): string | null {
  const packed = packIpv4Cidr(input);
  if (packed < 0) return null;
  const prefix = packed % 64;
  // Already canonical (explicit prefix, no host bits): hand back the caller's string. A 100k-entry
  // sync then allocates nothing here, and maps reuse the hash the string already carries.
  if (prefix === 32 && input.length > 8 && input.charCodeAt(input.length - 3) === 47) return input;
  const network = uint32ToIpv4((packed - prefix) / 64);
  const slash = input.indexOf('/');
  if (slash !== -1 && input.slice(0, slash) === network) return input;
  return `${network}/${prefix}`;
}

export function formatRange(range: Pick<Ipv4Range, 'start' | 'prefix'>): string {
  return `${uint32ToIpv4(range.start)}/${range.prefix}`;
}

/** Sorts canonical CIDRs in `sortCidrs` order, parsing each once (fast for 100k-entry sets). */
export function sortCidrsFast(cidrs: Iterable<string>): string[] {
  // network * 64 + prefix orders by network, then prefix: exactly sortCidrs' order.
  const keyed: { cidr: string; key: number }[] = [];
  for (const cidr of cidrs) keyed.push({ cidr, key: packIpv4Cidr(cidr) });
  keyed.sort((a, b) => a.key - b.key);
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
