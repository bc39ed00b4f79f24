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
  #keys = new Float64Array(0);

  constructor(private readonly codec: KindCodec) {}

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
