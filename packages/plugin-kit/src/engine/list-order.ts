import type { BlockEntry } from '../enforcer.ts';
import { sortByCodec, type KindCodec } from './codec.ts';

/**
 * The enforced entries in the kind's list order, kept between calls so that a list file's
 * batch (a 1,000-address diff against 100,000 entries) costs one linear merge instead of a sort
 * of the whole set: the cached order is patched with the batch's removals and insertions by key.
 * Needs the codec's `key` (one number per canonical value, in list order, never shared); without
 * one, every call sorts.
 */
export class ListOrder {
  #entries: BlockEntry[] | null = null;
  #keys: Float64Array = new Float64Array(0);

  constructor(private readonly codec: KindCodec) {}

  /** Takes `entries` (in list order, their keys in `keys`) as the order of the set. */
  seed(entries: BlockEntry[], keys: Float64Array): void {
    this.#entries = entries;
    this.#keys = keys;
  }

  /** Forgets the order (the set was replaced or cleared). */
  invalidate(): void {
    this.#entries = null;
  }

  /** The entries in list order (a new array); `all` gives them unordered when nothing is cached. */
  entries(all: () => BlockEntry[]): BlockEntry[] {
    const key = this.codec.key;
    if (!key) return sortByCodec(this.codec, all(), (e) => e.value);
    if (!this.#entries) {
      const list = all();
      const keys = new Float64Array(list.length);
      let ordered = true;
      for (let i = 0; i < list.length; i += 1) {
        keys[i] = key(list[i]!.value);
        if (i > 0 && keys[i]! <= keys[i - 1]!) ordered = false;
      }
      // A sync from the server arrives in list order, so the set's insertion order usually is.
      if (ordered) {
        this.#entries = list;
        this.#keys = keys;
      } else {
        const index = new Uint32Array(list.length);
        for (let i = 0; i < index.length; i += 1) index[i] = i;
        index.sort((a, b) => keys[a]! - keys[b]!);
        this.#entries = Array.from(index, (i) => list[i]!);
        this.#keys = Float64Array.from(index, (i) => keys[i]!);
      }
    }
    return this.#entries.slice();
  }

  /**
   * Applies a batch to the cached order: `removed` values leave, `upserts` (added, or enforced
   * with a new score) enter or replace the entry of the same value. A batch larger than an eighth
   * of the set drops the cache (the next call sorts, which is then no dearer than the merge).
   */
  patch(removed: readonly string[], upserts: readonly BlockEntry[]): void {
    const old = this.#entries;
    const key = this.codec.key;
    if (!old || !key) return;
    if (removed.length + upserts.length > old.length / 8 + 64) return this.invalidate();
    const gone = Float64Array.from(removed, key).sort();
    const keyed = upserts.map((entry) => ({ entry, key: key(entry.value) })).sort((a, b) => a.key - b.key);
    const oldKeys = this.#keys;
    const entries: BlockEntry[] = [];
    const keys = new Float64Array(old.length + keyed.length);
    let n = 0;
    let g = 0;
    let u = 0;
    const push = (entry: BlockEntry, k: number) => {
      entries.push(entry);
      keys[n++] = k;
    };
    for (let i = 0; i < old.length; i += 1) {
      const k = oldKeys[i]!;
      while (u < keyed.length && keyed[u]!.key < k) push(keyed[u]!.entry, keyed[u++]!.key);
      while (g < gone.length && gone[g]! < k) g += 1;
      if (g < gone.length && gone[g] === k) continue;
      if (u < keyed.length && keyed[u]!.key === k) push(keyed[u]!.entry, keyed[u++]!.key);
      else push(old[i]!, k);
    }
    while (u < keyed.length) push(keyed[u]!.entry, keyed[u++]!.key);
    this.#entries = entries;
    this.#keys = keys.subarray(0, n);
  }
}

/** A sync's input made canonical, deduplicated and put in list order, without a map. */
export interface OrderedInput {
  entries: BlockEntry[];
  keys: Float64Array;
  /** Inputs refused: not of the kind, not accepted, or without a finite score. */
  invalid: number;
}

/**
 * What `DesiredSet.replace` keeps of `input`, in list order: the canonical value of each accepted
 * entry with a finite score, a value given twice keeping its higher score. Needs the codec's key.
 */
export function orderInput(input: readonly BlockEntry[], canonical: (raw: string) => string | undefined, key: (value: string) => number): OrderedInput {
  let entries: BlockEntry[] = [];
  let keys = new Float64Array(input.length);
  let invalid = 0;
  let ordered = true;
  let n = 0;
  for (const entry of input) {
    const value = canonical(entry.value);
    if (value === undefined || !Number.isFinite(entry.score)) {
      invalid += 1;
      continue;
    }
    const k = key(value);
    if (n > 0 && k <= keys[n - 1]!) ordered = false;
    keys[n++] = k;
    // A copy: the caller may change its objects after the call; the cached order must not.
    entries.push({ value, score: entry.score });
  }
  keys = keys.subarray(0, n);
  if (!ordered) {
    const index = new Uint32Array(n);
    for (let i = 0; i < n; i += 1) index[i] = i;
    const unsorted = keys;
    index.sort((a, b) => unsorted[a]! - unsorted[b]! || a - b);
    const list = entries;
    entries = Array.from(index, (i) => list[i]!);
    keys = Float64Array.from(index, (i) => unsorted[i]!);
    // Equal keys are now adjacent: one value given twice keeps its higher score.
    let w = 0;
    for (let r = 0; r < n; r += 1) {
      if (w > 0 && keys[w - 1] === keys[r]) {
        if (entries[r]!.score > entries[w - 1]!.score) entries[w - 1] = entries[r]!;
        continue;
      }
      keys[w] = keys[r]!;
      entries[w++] = entries[r]!;
    }
    entries.length = w;
    keys = keys.subarray(0, w);
  }
  return { entries, keys, invalid };
}
