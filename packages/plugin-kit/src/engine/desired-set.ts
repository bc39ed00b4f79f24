import { setImmediate as yieldTurn } from 'node:timers/promises';
import type { BlockEntry, Diff } from '../enforcer.ts';
import { ipv4Codec, type KindCodec } from './codec.ts';

/**
 * Everything an enforcer was asked to enforce, keyed by canonical value, including entries the
 * capacity cut: a cut entry comes back when higher ones are removed, and a diff costs O(diff)
 * rather than a re-sort (for 100k-entry packet-filter sets). The cut rule is
 * `selectWithinCapacity`'s: highest score first, ties broken by the kind's list order.
 */
export class DesiredSet {
  readonly #scores = new Map<string, number>();
  /** Inputs seen by the last call that were refused (not of the kind, or not accepted). */
  invalid = 0;

  /**
   * @param codec the indicator kind (IPv4 by default)
   * @param accepts further refuses canonical values the target cannot hold (counted as invalid)
   */
  constructor(
    readonly codec: KindCodec = ipv4Codec,
    private readonly accepts: (value: string) => boolean = () => true,
  ) {}

  get size(): number {
    return this.#scores.size;
  }

  has(value: string): boolean {
    return this.#scores.has(value);
  }

  /** The canonical, accepted form of `raw`, or undefined. */
  canonical(raw: string): string | undefined {
    const value = this.codec.canonical(raw);
    return value !== undefined && this.accepts(value) ? value : undefined;
  }

  replace(entries: readonly BlockEntry[]): void {
    this.#scores.clear();
    this.invalid = 0;
    this.#addAll(entries, true);
  }

  /**
   * `replace` with input already canonical, accepted, finite and without duplicates (`orderInput`),
   * `invalid` counted by the caller. Yields to the event loop every 8,192 entries, so that the
   * target's write and reload, started before, run meanwhile.
   */
  async replaceChecked(entries: readonly BlockEntry[], invalid: number): Promise<void> {
    this.#scores.clear();
    this.invalid = invalid;
    for (let i = 0; i < entries.length; i += 1) {
      const entry = entries[i]!;
      this.#scores.set(entry.value, entry.score);
      if ((i & 8191) === 8191) await yieldTurn();
    }
  }

  /** Removals first, then additions: a value named in both ends up enforced. */
  apply(diff: Diff): void {
    this.invalid = 0;
    for (const raw of diff.remove) {
      const value = this.canonical(raw);
      if (value !== undefined) this.#scores.delete(value);
      else this.invalid += 1;
    }
    this.#addAll(diff.add, false);
  }

  clear(): void {
    this.#scores.clear();
    this.invalid = 0;
  }

  /** Canonical values (insertion order). */
  values(): IterableIterator<string> {
    return this.#scores.keys();
  }

  score(value: string): number | undefined {
    return this.#scores.get(value);
  }

  entries(): BlockEntry[] {
    // forEach rather than spreading the map: no [value, score] pair per entry.
    const out: BlockEntry[] = [];
    this.#scores.forEach((score, value) => out.push({ value, score }));
    return out;
  }

  /** The entries that fit in `capacity`, and how many were cut. */
  withinCapacity(capacity: number): { kept: BlockEntry[]; cut: number } {
    return selectWithinCapacity(this.entries(), capacity, this.codec);
  }

  /** `fresh`: the map was just cleared, so any value in it comes from this call. */
  #addAll(entries: readonly BlockEntry[], fresh: boolean): void {
    const seen = fresh ? null : new Set<string>();
    for (const entry of entries) {
      const value = this.canonical(entry.value);
      if (value === undefined || !Number.isFinite(entry.score)) {
        this.invalid += 1;
        continue;
      }
      // Within one call a duplicate keeps the higher score; across calls the newer score wins.
      const previous = !seen || seen.has(value) ? (this.#scores.get(value) ?? -Infinity) : -Infinity;
      seen?.add(value);
      this.#scores.set(value, previous >= entry.score ? previous : entry.score);
    }
  }
}

/** Keeps the `capacity` highest-scored entries (ties: the kind's list order). Input is canonical. */
export function selectWithinCapacity(
  entries: readonly BlockEntry[],
  capacity: number,
  codec: KindCodec = ipv4Codec,
): { kept: BlockEntry[]; cut: number } {
  if (entries.length <= capacity) return { kept: [...entries], cut: 0 };
  const keep = Math.max(0, Math.floor(capacity));
  let ranked: BlockEntry[];
  if (codec.key) {
    const keyed = entries.map((entry) => ({ entry, key: codec.key!(entry.value) }));
    keyed.sort((a, b) => b.entry.score - a.entry.score || a.key - b.key);
    ranked = keyed.map((k) => k.entry);
  } else {
    ranked = [...entries].sort((a, b) => b.score - a.score || codec.compare(a.value, b.value));
  }
  return { kept: ranked.slice(0, keep), cut: entries.length - keep };
}
