import { formatIpv4 } from '@rampart/contracts';

/*
 * IPv4 ranges for enforcers whose backends speak in ranges (nft interval sets) or must reason
 * about overlaps. The grammar, keys and canonical spelling are @rampart/contracts' IPv4 module.
 */

export function formatRange(range: { start: number; prefix: number }): string {
  return `${formatIpv4(range.start)}/${range.prefix}`;
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
