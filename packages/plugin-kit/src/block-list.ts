import { canonicalIpv4Cidr, compareIpv4, ipv4Key, ipv4ListForm } from '@rampart/contracts';
import type { BlockEntry } from './enforcer.ts';

/*
 * Helpers every list-shaped enforcer needs: canonical IPv4 CIDRs (the grammar is
 * @rampart/contracts' IPv4 module, the one every side shares), the capacity cut (keep the
 * highest live scores: `keepTop`, the conformance suite's oracle for the engine's own cut).
 */

/** `203.0.113.7` → `203.0.113.7/32`, `198.51.100.9/24` → `198.51.100.0/24`; undefined if not IPv4. */
export const canonicalCidr: (text: string) => string | undefined = canonicalIpv4Cidr;

/** The form most list files use: a bare address for a /32, the CIDR otherwise. */
export const cidrToListForm: (cidr: string) => string = ipv4ListForm;

/** Numeric order (address, then prefix) so that read-backs compare exactly. */
export const compareCidrs: (a: string, b: string) => number = compareIpv4;

/** Sort key: address × 64 + prefix, exact in a double; non-IPv4 text sorts last, by text. */
function sortKey(cidr: string): number {
  const key = ipv4Key(cidr);
  return key >= 0 ? key : Number.MAX_SAFE_INTEGER;
}

function byKey<T>(items: T[], cidrOf: (item: T) => string): T[] {
  // Keys computed once: comparing parsed strings inside sort() costs ~20× on 100k entries.
  const keyed = items.map((item) => ({ item, key: sortKey(cidrOf(item)), value: cidrOf(item) }));
  keyed.sort((a, b) => a.key - b.key || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  return keyed.map((k) => k.item);
}

export function sortCidrs(cidrs: Iterable<string>): string[] {
  return byKey([...new Set(cidrs)], (c) => c);
}

/** Entries in `sortCidrs` order (a new array). */
function sortEntries<T extends { value: string }>(entries: Iterable<T>): T[] {
  return byKey([...entries], (e) => e.value);
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
    const cidr = canonicalCidr(e.value);
    if (!cidr) continue;
    const prev = best.get(cidr);
    if (prev === undefined || e.score > prev) best.set(cidr, e.score);
  }
  const all = [...best].map(([cidr, score]) => ({ value: cidr, score }));
  if (all.length <= capacity) return { kept: sortEntries(all), cut: 0 };
  all.sort((a, b) => b.score - a.score || compareCidrs(a.value, b.value));
  const kept = sortEntries(all.slice(0, Math.max(0, capacity)));
  return { kept, cut: all.length - kept.length };
}
