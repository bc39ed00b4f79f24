import type { BlockEntry, Diff } from '../enforcer.ts';
import { ipv4Codec, type KindCodec } from './codec.ts';
import { orderInput, SortedEntries } from './list-order.ts';

/**
 * Everything an enforcer was asked to enforce, keyed by canonical value, including entries the
 * capacity cut: a cut entry comes back when higher ones are removed, and a diff does not re-sort
 * the set. The cut rule is `selectWithinCapacity`'s: highest score first, ties broken by the
 * kind's list order.
 *
 * Two layouts, one behaviour. Unordered (a kernel set): a map, so a diff costs O(diff) against
 * 100k-entry packet-filter sets. In list order (`ordered`, for targets written whole in the kind's
 * order, such as list files, when the codec has a `key`): `SortedEntries`, so a sync adopts its
 * ordered input without building a map and `entries()` is already in list order.
 */
export class DesiredSet {
  readonly #scores = new Map<string, number>();
  readonly #sorted: SortedEntries | null;
  /** Inputs seen by the last call that were refused (not of the kind, or not accepted). */
  invalid = 0;

  /**
   * @param codec the indicator kind (IPv4 by default)
   * @param accepts further refuses canonical values the target cannot hold (counted as invalid)
   * @param ordered keep the set in the kind's list order (needs the codec's `key`; else ignored)
   */
  constructor(
    readonly codec: KindCodec = ipv4Codec,
    private readonly accepts: (value: string) => boolean = () => true,
    ordered = false,
  ) {
    this.#sorted = ordered && codec.key ? new SortedEntries(codec.key) : null;
  }

  /** True when `entries()` comes in the kind's list order. */
  get ordered(): boolean {
    return this.#sorted !== null;
  }

  get size(): number {
    return this.#sorted ? this.#sorted.size : this.#scores.size;
  }

  has(value: string): boolean {
    return this.#sorted ? this.#sorted.get(value) !== undefined : this.#scores.has(value);
  }

  /** The canonical, accepted form of `raw`, or undefined. */
  canonical(raw: string): string | undefined {
    const value = this.codec.canonical(raw);
    return value !== undefined && this.accepts(value) ? value : undefined;
  }

  /** `canonical`, also giving the value's key in `out.key` (the codec must have a `key`). */
  readonly canonicalKey = (raw: string, out: { key: number }): string | undefined => {
    const codec = this.codec;
    let value: string | undefined;
    if (codec.canonicalKey) value = codec.canonicalKey(raw, out);
    else if ((value = codec.canonical(raw)) !== undefined) out.key = codec.key!(value);
    return value !== undefined && this.accepts(value) ? value : undefined;
  };

  replace(entries: readonly BlockEntry[]): void {
    if (this.#sorted) {
      const ordered = orderInput(entries, this.canonicalKey);
      this.replaceChecked(ordered.entries, ordered.keys, ordered.invalid);
      return;
    }
    this.#scores.clear();
    this.invalid = 0;
    this.#addAll(entries, true);
  }

  /**
   * `replace` with `orderInput`'s output (canonical, accepted, finite, no duplicates, in list order
   * with their keys), `invalid` counted by the caller. The arrays are owned by the set from now on.
   */
  replaceChecked(entries: BlockEntry[], keys: Float64Array, invalid: number): void {
    this.invalid = invalid;
    if (this.#sorted) {
      this.#sorted.adopt(entries, keys);
      return;
    }
    this.#scores.clear();
    for (const entry of entries) this.#scores.set(entry.value, entry.score);
  }

  /** Removals first, then additions: a value named in both ends up enforced. */
  apply(diff: Diff): void {
    this.invalid = 0;
    const gone: string[] = [];
    for (const raw of diff.remove) {
      const value = this.canonical(raw);
      if (value !== undefined) gone.push(value);
      else this.invalid += 1;
    }
    if (!this.#sorted) {
      for (const value of gone) this.#scores.delete(value);
      this.#addAll(diff.add, false);
      return;
    }
    // Within one call a duplicate keeps the higher score; the call's score replaces the set's.
    const upserts = new Map<string, number>();
    for (const entry of diff.add) {
      const value = this.canonical(entry.value);
      if (value === undefined || !Number.isFinite(entry.score)) {
        this.invalid += 1;
        continue;
      }
      const previous = upserts.get(value) ?? -Infinity;
      upserts.set(value, previous >= entry.score ? previous : entry.score);
    }
    const key = this.#sorted.key;
    this.#sorted.merge(
      gone.map(key),
      Array.from(upserts, ([value, score]) => ({ value, score })),
    );
  }

  clear(): void {
    this.#scores.clear();
    this.#sorted?.clear();
    this.invalid = 0;
  }

  /** Canonical values (list order when `ordered`, else insertion order). */
  values(): IterableIterator<string> {
    return this.#sorted ? this.#sorted.view().map((e) => e.value).values() : this.#scores.keys();
  }

  score(value: string): number | undefined {
    return this.#sorted ? this.#sorted.get(value)?.score : this.#scores.get(value);
  }

  /** The entries (a new array; list order when `ordered`, else insertion order). */
  entries(): BlockEntry[] {
    if (this.#sorted) return this.#sorted.view().slice();
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
