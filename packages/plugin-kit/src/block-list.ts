import type { BlockEntry, Diff } from './enforcer.ts';

/*
 * Helpers every list-shaped enforcer needs: canonical IPv4 CIDRs, the capacity cut (keep the
 * highest live scores) and an in-memory table of what an enforcer owns with its scores.
 */

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(\d{1,2}))?$/;

function toInt(text: string): { value: number; prefix: number } | undefined {
  const m = IPV4.exec(text.trim());
  if (!m) return undefined;
  const octets = m.slice(1, 5).map(Number);
  if (octets.some((o) => o > 255)) return undefined;
  const prefix = m[5] === undefined ? 32 : Number(m[5]);
  if (prefix > 32) return undefined;
  const value = ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
  return { value, prefix };
}

function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

function fromInt(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

/** `203.0.113.7` → `203.0.113.7/32`, `198.51.100.9/24` → `198.51.100.0/24`; undefined if not IPv4. */
export function canonicalCidr(text: string): string | undefined {
  const parsed = toInt(text);
  if (!parsed) return undefined;
  return `${fromInt((parsed.value & maskOf(parsed.prefix)) >>> 0)}/${parsed.prefix}`;
}

/** The form most list files use: a bare address for a /32, the CIDR otherwise. */
export function cidrToListForm(cidr: string): string {
  return cidr.endsWith('/32') ? cidr.slice(0, -3) : cidr;
}

/** Numeric order (address, then prefix) so that read-backs compare exactly. */
export function compareCidrs(a: string, b: string): number {
  const x = toInt(a);
  const y = toInt(b);
  if (!x || !y) return a < b ? -1 : a > b ? 1 : 0;
  return x.value - y.value || x.prefix - y.prefix;
}

export function sortCidrs(cidrs: Iterable<string>): string[] {
  return [...new Set(cidrs)].sort(compareCidrs);
}

/** Canonical CIDRs of the lines of a list file; comments (`#`) and blanks are skipped. */
export function parseCidrLines(text: string, pick: (line: string) => string = (l) => l): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    const cidr = canonicalCidr(pick(line));
    if (cidr) out.push(cidr);
  }
  return sortCidrs(out);
}

/**
 * Deduplicates (highest score wins), then keeps the `capacity` highest scores; ties break on
 * address order so that the same input always keeps the same entries.
 */
export function keepTop(entries: Iterable<BlockEntry>, capacity: number): { kept: BlockEntry[]; cut: number } {
  const best = new Map<string, number>();
  for (const e of entries) {
    const cidr = canonicalCidr(e.cidr);
    if (!cidr) continue;
    const prev = best.get(cidr);
    if (prev === undefined || e.score > prev) best.set(cidr, e.score);
  }
  const all = [...best].map(([cidr, score]) => ({ cidr, score }));
  if (all.length <= capacity) return { kept: all.sort((a, b) => compareCidrs(a.cidr, b.cidr)), cut: 0 };
  all.sort((a, b) => b.score - a.score || compareCidrs(a.cidr, b.cidr));
  const kept = all.slice(0, Math.max(0, capacity)).sort((a, b) => compareCidrs(a.cidr, b.cidr));
  return { kept, cut: all.length - kept.length };
}

/** What an enforcer owns, with scores, so that a diff can be capped like a full set. */
export class BlockTable {
  private readonly scores = new Map<string, number>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.scores.size;
  }

  has(cidr: string): boolean {
    return this.scores.has(cidr);
  }

  /** Replaces the content; returns how many entries the capacity cut. */
  replace(entries: Iterable<BlockEntry>): number {
    const { kept, cut } = keepTop(entries, this.capacity);
    this.scores.clear();
    for (const e of kept) this.scores.set(e.cidr, e.score);
    return cut;
  }

  /** Applies a diff (removals first, so a re-add within one diff stays); returns the cut. */
  apply(diff: Diff): number {
    for (const r of diff.remove) {
      const cidr = canonicalCidr(r);
      if (cidr) this.scores.delete(cidr);
    }
    const merged = [...this.entries()];
    for (const a of diff.add) merged.push(a);
    return this.replace(merged);
  }

  entries(): BlockEntry[] {
    return [...this.scores]
      .map(([cidr, score]) => ({ cidr, score }))
      .sort((a, b) => compareCidrs(a.cidr, b.cidr));
  }

  cidrs(): string[] {
    return this.entries().map((e) => e.cidr);
  }
}
