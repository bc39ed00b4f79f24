import type { Columns } from './columns.ts';

const TWO_32 = 4_294_967_296;

/** Network mask of a prefix length (0 for /0). */
function maskOf(len: number): number {
  return len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
}

/** Sorts `addrs` ascending, carrying `ids` along (LSD radix, two 16-bit digits). */
function sortPairs(addrs: Uint32Array, ids: Float64Array): void {
  const n = addrs.length;
  if (n < 2) return;
  const tmpAddrs = new Uint32Array(n);
  const tmpIds = new Float64Array(n);
  // Low digit into the scratch arrays, high digit back: the sorted pairs end where they began.
  radixPass(addrs, ids, tmpAddrs, tmpIds, 0);
  radixPass(tmpAddrs, tmpIds, addrs, ids, 16);
}

function radixPass(fromAddrs: Uint32Array, fromIds: Float64Array, toAddrs: Uint32Array, toIds: Float64Array, shift: number): void {
  const count = new Uint32Array(65_537);
  const n = fromAddrs.length;
  for (let i = 0; i < n; i++) count[((fromAddrs[i]! >>> shift) & 0xffff) + 1]!++;
  for (let d = 1; d < 65_537; d++) count[d]! += count[d - 1]!;
  for (let i = 0; i < n; i++) {
    const at = count[(fromAddrs[i]! >>> shift) & 0xffff]!++;
    toAddrs[at] = fromAddrs[i]!;
    toIds[at] = fromIds[i]!;
  }
}

/**
 * Which held networks contain an address, for look-ups (`GET /ips/{ipv4}`): per prefix length, the
 * networks' first addresses sorted with their indicator ids (built from the columns), plus the
 * networks added since (`recent`). Entries are candidates: a row deleted since, or one whose id no
 * longer holds that network, is told apart by the caller against the columns (`Ipv4Mirror.holding`).
 */
export class AddressIndex {
  private readonly addrs: Uint32Array[] = [];
  private readonly ids: Float64Array[] = [];
  /** len × 2^32 + first address → id, for networks added after the build. */
  private readonly recent = new Map<number, number>();
  private readonly recentPerLen = new Uint32Array(33);
  /** The prefix lengths held, longest first. */
  private lens: number[] = [];

  constructor(cols: Columns) {
    const perLen = new Uint32Array(33);
    for (let i = 0; i < cols.n; i++) perLen[cols.len[i]!]!++;
    for (let len = 0; len <= 32; len++) {
      this.addrs.push(new Uint32Array(perLen[len]!));
      this.ids.push(new Float64Array(perLen[len]!));
    }
    const at = new Uint32Array(33);
    for (let i = 0; i < cols.n; i++) {
      const len = cols.len[i]!;
      const k = at[len]!++;
      this.addrs[len]![k] = cols.addr[i]!;
      this.ids[len]![k] = cols.id[i]!;
    }
    for (let len = 0; len <= 32; len++) sortPairs(this.addrs[len]!, this.ids[len]!);
    this.setLens();
  }

  private setLens(): void {
    this.lens = [];
    for (let len = 32; len >= 0; len--) if (this.addrs[len]!.length > 0 || this.recentPerLen[len]! > 0) this.lens.push(len);
  }

  /** Networks added since the build: rebuild (a new index from the columns) when they grow large. */
  get added(): number {
    return this.recent.size;
  }

  add(addr: number, len: number, id: number): void {
    const key = len * TWO_32 + addr;
    if (!this.recent.has(key) && this.recentPerLen[len]!++ === 0) this.setLens();
    this.recent.set(key, id);
  }

  /** Calls `found(id, network address, len)` for each candidate holding `addr`, most specific first. */
  candidates(addr: number, found: (id: number, net: number, len: number) => void): void {
    for (const len of this.lens) {
      const addrs = this.addrs[len]!;
      const hasRecent = this.recentPerLen[len]! > 0;
      const net = (addr & maskOf(len)) >>> 0;
      let lo = 0;
      let hi = addrs.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (addrs[mid]! < net) lo = mid + 1;
        else hi = mid;
      }
      const base = lo < addrs.length && addrs[lo] === net ? this.ids[len]![lo]! : undefined;
      const late = hasRecent ? this.recent.get(len * TWO_32 + net) : undefined;
      if (base !== undefined && late !== undefined && late !== base) {
        // The network left under one id and came back under another: both are checked.
        found(Math.min(base, late), net, len);
        found(Math.max(base, late), net, len);
      } else if (base !== undefined) found(base, net, len);
      else if (late !== undefined) found(late, net, len);
    }
  }
}
