import { parseIpv4 } from '@rampart/contracts';
import type { BlockEntry, Diff } from './enforcer.ts';
import { ipv4Codec, type KindCodec } from './kinds.ts';

/**
 * Everything an enforcer was asked to enforce, keyed by canonical CIDR, including entries the
 * capacity cut: unlike `BlockTable`, a cut entry comes back when higher ones are removed, and a
 * diff costs O(diff) rather than a re-sort (for 100k-entry packet-filter sets). The cut rule is
 * `keepTop`'s: highest score first, ties broken by address order.
 */
export class DesiredSet {
  readonly #scores = new Map<string, number>();
  /** Inputs seen by the last call that were not of the codec's kind (ignored, counted for logs). */
  invalid = 0;

  /** `codec`: the indicator kind held (IPv4 CIDRs unless told otherwise). */
  constructor(readonly codec: KindCodec = ipv4Codec) {}

  get size(): number {
    return this.#scores.size;
  }

  has(cidr: string): boolean {
    return this.#scores.has(cidr);
  }

  replace(entries: readonly BlockEntry[]): void {
    this.#scores.clear();
    this.invalid = 0;
    this.#addAll(entries, true);
  }

  /** Removals first, then additions: a CIDR named in both ends up enforced. */
  apply(diff: Diff): void {
    this.invalid = 0;
    for (const raw of diff.remove) {
      const cidr = this.codec.canonical(raw);
      if (cidr) this.#scores.delete(cidr);
      else this.invalid += 1;
    }
    this.#addAll(diff.add, false);
  }

  clear(): void {
    this.#scores.clear();
  }

  /** Canonical CIDRs (insertion order). */
  cidrs(): IterableIterator<string> {
    return this.#scores.keys();
  }

  entries(): BlockEntry[] {
    return [...this.#scores].map(([cidr, score]) => ({ value: cidr, score }));
  }

  /** The entries that fit in `capacity`, and how many were cut. */
  withinCapacity(capacity: number): { kept: BlockEntry[]; cut: number } {
    return selectWithinCapacity(this.entries(), capacity, this.codec);
  }

  /** `fresh`: the map was just cleared, so any value in it comes from this call. */
  #addAll(entries: readonly BlockEntry[], fresh: boolean): void {
    const seen = fresh ? null : new Set<string>();
    for (const entry of entries) {
      const cidr = this.codec.canonical(entry.value);
      if (!cidr || !Number.isFinite(entry.score)) {
        this.invalid += 1;
        continue;
      }
      // Within one call a duplicate keeps the higher score; across calls the newer score wins.
      const previous = !seen || seen.has(cidr) ? (this.#scores.get(cidr) ?? -Infinity) : -Infinity;
      seen?.add(cidr);
      this.#scores.set(cidr, previous >= entry.score ? previous : entry.score);
    }
  }
}

/** Keeps the `capacity` highest-scored entries (ties: the codec's order, lower address first). Input is canonical. */
export function selectWithinCapacity(entries: readonly BlockEntry[], capacity: number, codec: KindCodec = ipv4Codec): { kept: BlockEntry[]; cut: number } {
  if (entries.length <= capacity) return { kept: [...entries], cut: 0 };
  if (codec.kind !== 'ipv4') {
    const sorted = [...entries].sort((a, b) => b.score - a.score || codec.compare(a.value, b.value));
    const keep = Math.max(0, Math.floor(capacity));
    return { kept: sorted.slice(0, keep), cut: entries.length - keep };
  }
  const keyed = entries.map((entry) => {
    const range = parseIpv4(entry.value);
    return { entry, start: range?.start ?? 0, prefix: range?.prefix ?? 0 };
  });
  keyed.sort((a, b) => b.entry.score - a.entry.score || a.start - b.start || a.prefix - b.prefix);
  const keep = Math.max(0, Math.floor(capacity));
  return { kept: keyed.slice(0, keep).map((k) => k.entry), cut: entries.length - keep };
}
