import type { BlockEntry } from '../enforcer.ts';

/**
 * Entries in the kind's list order, one per key (the codec's `key`, a number in list order that
 * no two canonical values share), as a sorted array of entries and a typed array of their keys:
 * the desired set of a target written in list order (a list file). A sync adopts `orderInput`'s
 * arrays as they are (no map to build), a look-up is a binary search, and a batch (a 1,000-entry
 * diff against 100,000 entries) is one linear merge, which the file's rewrite costs anyway.
 */
export class SortedEntries {
  #entries: BlockEntry[] = [];
  #keys: Float64Array = new Float64Array(0);

  constructor(readonly key: (canonical: string) => number) {}

  get size(): number {
    return this.#entries.length;
  }

  /** Takes `entries` (list order, unique keys, given in `keys`); the arrays are owned from now on. */
  adopt(entries: BlockEntry[], keys: Float64Array): void {
    this.#entries = entries;
    this.#keys = keys;
  }

  clear(): void {
    this.adopt([], new Float64Array(0));
  }

  /** The entry of canonical `value`, or undefined. */
  get(value: string): BlockEntry | undefined {
    const k = this.key(value);
    const keys = this.#keys;
    let lo = 0;
    let hi = this.#entries.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = keys[mid]!;
      if (at === k) {
        const entry = this.#entries[mid]!;
        return entry.value === value ? entry : undefined;
      }
      if (at < k) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  /** The entries in list order (the array itself: callers copy before changing it). */
  view(): readonly BlockEntry[] {
    return this.#entries;
  }

  /**
   * One batch: the entries whose keys are in `gone` leave, then `upserts` (canonical, unique
   * values) enter or replace the entry of the same value. One linear merge.
   */
  merge(gone: Iterable<number>, upserts: readonly BlockEntry[]): void {
    const key = this.key;
    const removed = Float64Array.from(gone).sort();
    const keyed = upserts.map((entry) => ({ entry, key: key(entry.value) })).sort((a, b) => a.key - b.key);
    const old = this.#entries;
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
      if (u < keyed.length && keyed[u]!.key === k) {
        push(keyed[u]!.entry, keyed[u++]!.key);
        continue;
      }
      while (g < removed.length && removed[g]! < k) g += 1;
      if (g < removed.length && removed[g] === k) continue;
      push(old[i]!, k);
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
 * entry with a finite score, a value given twice keeping its higher score. `canonical` gives the
 * canonical, accepted form of a raw value (undefined to refuse it) and its key in `out.key`.
 */
export function orderInput(input: readonly BlockEntry[], canonical: (raw: string, out: { key: number }) => string | undefined): OrderedInput {
  let entries: BlockEntry[] = [];
  let keys = new Float64Array(input.length);
  let invalid = 0;
  let ordered = true;
  let n = 0;
  const out = { key: 0 };
  for (const entry of input) {
    const value = canonical(entry.value, out);
    if (value === undefined || !Number.isFinite(entry.score)) {
      invalid += 1;
      continue;
    }
    const k = out.key;
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
