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

/** Reads 1–3 decimal digits at `i` (no leading zero unless the number is 0); -1 when invalid. */
function readNumber(input: string, i: number, max: number): [value: number, next: number] | null {
  let value = 0;
  let j = i;
  while (j < input.length && j - i < 3) {
    const c = input.charCodeAt(j);
    if (c < 48 || c > 57) break;
    value = value * 10 + (c - 48);
    j += 1;
  }
  if (j === i || value > max || (j - i > 1 && input.charCodeAt(i) === 48)) return null;
  return [value, j];
}

/**
 * Parses `a.b.c.d` or `a.b.c.d/n` (strict dotted quad: decimal, no leading zeros, nothing
 * around it); null when it is not IPv4. Hand-written because enforcers parse 100,000 entries per
 * full sync and a regex or a general library costs several times the backend's own load time.
 */
export function parseIpv4Cidr(input: string): Ipv4Range | null {
  let value = 0;
  let i = 0;
  for (let octet = 0; octet < 4; octet += 1) {
    const read = readNumber(input, i, 255);
    if (!read) return null;
    value = value * 256 + read[0];
    i = read[1];
    if (octet < 3) {
      if (input.charCodeAt(i) !== 46) return null;
      i += 1;
    }
  }
  let prefix = 32;
  if (i < input.length) {
    if (input.charCodeAt(i) !== 47) return null;
    const read = readNumber(input, i + 1, 32);
    if (!read || read[1] !== input.length) return null;
    prefix = read[0];
  }
  const mask = maskOf(prefix);
  const start = (value & mask) >>> 0;
  return { start, end: (start | (~mask >>> 0)) >>> 0, prefix };
}

/** Canonical CIDR (`network/len`) of a strict IPv4 address or network; null when not IPv4. */
export function canonicalIpv4Cidr(input: string): string | null {
  const range = parseIpv4Cidr(input);
  if (!range) return null;
  // Already canonical (explicit prefix, no host bits): hand back the caller's string. A 100k-entry
  // sync then allocates nothing here, and maps reuse the hash the string already carries.
  if (input.length > 8 && input.charCodeAt(input.length - 3) === 47 && range.prefix === 32) return input;
  if (input.indexOf('/') !== -1 && hostBitsZero(input, range)) return input;
  return `${uint32ToIpv4(range.start)}/${range.prefix}`;
}

/** True when `input` (which parsed to `range`) spells the network address itself. */
function hostBitsZero(input: string, range: Ipv4Range): boolean {
  return input.slice(0, input.indexOf('/')) === uint32ToIpv4(range.start);
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
