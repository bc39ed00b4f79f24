/**
 * Disjoint, sorted IPv4 ranges with a value each, answered by binary search over typed arrays
 * (400k ranges cost ~5 MB and a look-up is ~20 comparisons, no allocation). A range holds the
 * index of its value in a table of distinct values (an AS per ~5 ranges, a CDN per hundreds), so
 * the index is three typed arrays and a short table: no per-range JavaScript object or pointer.
 */
export class Ipv4RangeIndex<V> {
  private constructor(
    private readonly starts: Uint32Array,
    private readonly ends: Uint32Array,
    private readonly ids: Uint32Array,
    private readonly table: { readonly length: number; at(id: number): V | undefined },
  ) {}

  get size(): number {
    return this.starts.length;
  }

  /** Ranges sorted by start, with each range's value given directly. */
  static fromSorted<V>(starts: Uint32Array, ends: Uint32Array, values: readonly V[]): Ipv4RangeIndex<V> {
    const table: V[] = [];
    const idOf = new Map<V, number>();
    const ids = Uint32Array.from(values, (v) => {
      let id = idOf.get(v);
      if (id === undefined) idOf.set(v, (id = table.push(v) - 1));
      return id;
    });
    return Ipv4RangeIndex.fromSortedIds(starts, ends, ids, table);
  }

  /**
   * Ranges sorted by start (e.g. an ASN table), each naming its value by index in `table`. The
   * published table has the odd overlapping row; such a row is clipped to start after its
   * predecessor (dropped when nothing is left). The arrays are compacted in place and copied to
   * their final length, so a caller may pass over-allocated arrays.
   */
  static fromSortedIds<V>(starts: Uint32Array, ends: Uint32Array, ids: Uint32Array, table: { readonly length: number; at(id: number): V | undefined }): Ipv4RangeIndex<V> {
    let n = 0;
    for (let i = 0; i < starts.length; i++) {
      let start = starts[i]!;
      if (n > 0 && start <= ends[n - 1]!) start = ends[n - 1]! + 1;
      if (start > ends[i]! || (n > 0 && ends[n - 1] === 0xffffffff)) continue;
      starts[n] = start;
      ends[n] = ends[i]!;
      ids[n] = ids[i]!;
      n++;
    }
    return new Ipv4RangeIndex(starts.slice(0, n), ends.slice(0, n), ids.slice(0, n), table);
  }

  /**
   * Ranges in any order that may nest (CIDR lists of several providers): flattened into disjoint
   * segments where the most specific (innermost) range wins.
   */
  static fromNested<V>(ranges: Array<{ start: number; end: number; value: V }>): Ipv4RangeIndex<V> {
    const sorted = [...ranges].sort((a, b) => a.start - b.start || b.end - a.end);
    const out: Array<{ start: number; end: number; value: V }> = [];
    const emit = (start: number, end: number, value: V) => {
      if (start > end) return;
      const last = out[out.length - 1];
      if (last && last.end + 1 === start && last.value === value) last.end = end;
      else out.push({ start, end, value });
    };
    const stack: Array<{ start: number; end: number; value: V }> = [];
    let pos = 0;
    const popUntil = (limit: number) => {
      while (stack.length > 0 && stack[stack.length - 1]!.end < limit) {
        const top = stack.pop()!;
        emit(pos, top.end, top.value);
        pos = Math.max(pos, top.end + 1);
      }
    };
    for (const r of sorted) {
      popUntil(r.start);
      const top = stack[stack.length - 1];
      if (top) emit(pos, r.start - 1, top.value);
      // A range that only partly overlaps the enclosing one (not possible with CIDRs) is clipped.
      const clipped = top && r.end > top.end ? { ...r, end: top.end } : r;
      pos = Math.max(pos, r.start);
      stack.push(clipped);
    }
    popUntil(Number.POSITIVE_INFINITY);
    return Ipv4RangeIndex.fromSorted(
      Uint32Array.from(out, (s) => s.start),
      Uint32Array.from(out, (s) => s.end),
      out.map((s) => s.value),
    );
  }

  /** The value of the range holding `ip` (an unsigned 32-bit number), or undefined. */
  find(ip: number): V | undefined {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.starts[mid]! <= ip) lo = mid + 1;
      else hi = mid - 1;
    }
    return hi >= 0 && this.ends[hi]! >= ip ? this.table.at(this.ids[hi]!) : undefined;
  }
}
