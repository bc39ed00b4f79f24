/**
 * Rendered plain-text list bodies (`/flat`, `/ipv4`), each kept under a key naming everything its
 * bytes depend on: the organization's view (policy, decisions, delay), the threshold, the page,
 * the format, the request second (live scores and cutoffs move with it) and the mirror's
 * generation (services/ipv4/mirror: it moves with every change a catch-up applies). A body is
 * built once per key and reused by every request that names the same key; a moved generation or
 * second makes new keys, and the old bodies age out.
 *
 * Memory is bounded by a byte budget: least recently used bodies go first, and a body larger than
 * the budget is never kept (its request streams as without the cache). Concurrent requests for a
 * key being built wait for that one build.
 */

/** What a cached list answer holds: its page's figures and its bytes. */
export interface CachedListBody<Key = unknown> {
  upTo: Key | null;
  more: boolean;
  empty: boolean;
  version: string;
  body: Buffer;
}

export interface ListBodyCacheStats {
  bytes: number;
  entries: number;
  hits: number;
  misses: number;
  evictions: number;
  /** Bodies built but not kept: larger than the budget, or their generation moved while built. */
  skipped: number;
}

/** Keys of bodies found too large, remembered so their requests stream at once (at most this many). */
const TOO_LARGE_KEYS = 256;

export class ListBodyCache {
  private readonly entries = new Map<string, CachedListBody>();
  private readonly building = new Map<string, Promise<CachedListBody | null>>();
  private readonly tooLarge = new Set<string>();
  private bytesHeld = 0;
  private readonly counts = { hits: 0, misses: 0, evictions: 0, skipped: 0 };

  /** `maxBytes`: the budget of every body held together; 0 keeps none. */
  constructor(readonly maxBytes: number) {}

  get stats(): ListBodyCacheStats {
    return { bytes: this.bytesHeld, entries: this.entries.size, ...this.counts };
  }

  /** The body kept under `key`, now the most recently used; undefined when none is. */
  get<Key>(key: string): CachedListBody<Key> | undefined {
    const hit = this.entries.get(key);
    if (hit === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, hit);
    this.counts.hits++;
    return hit as CachedListBody<Key>;
  }

  /** Whether a body under `key` was found larger than the budget: its requests stream instead. */
  known(key: string): boolean {
    return this.maxBytes === 0 || this.tooLarge.has(key);
  }

  /**
   * The body under `key`: the kept one, the one being built by another request, or the one `build`
   * makes now (null from `build`: too large, stream it). `current()` is asked once the build ended:
   * false (the generation moved meanwhile) serves the body to this request without keeping it.
   */
  async take<Key>(key: string, build: () => Promise<CachedListBody<Key> | null>, current: () => boolean): Promise<CachedListBody<Key> | null> {
    const hit = this.get<Key>(key);
    if (hit) return hit;
    const pending = this.building.get(key);
    if (pending) return (await pending) as CachedListBody<Key> | null;
    this.counts.misses++;
    const run = build().then((made) => {
      if (made === null) this.markTooLarge(key);
      else if (current()) this.put(key, made);
      else this.counts.skipped++;
      return made;
    });
    this.building.set(key, run as Promise<CachedListBody | null>);
    try {
      return await run;
    } finally {
      this.building.delete(key);
    }
  }

  /** Keeps `entry` under `key` within the budget (false: larger than the budget, not kept). */
  put(key: string, entry: CachedListBody): boolean {
    const size = entry.body.byteLength;
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.bytesHeld -= old.body.byteLength;
    }
    if (size > this.maxBytes) {
      this.markTooLarge(key);
      return false;
    }
    while (this.bytesHeld + size > this.maxBytes) {
      const [oldest, gone] = this.entries.entries().next().value!;
      this.entries.delete(oldest);
      this.bytesHeld -= gone.body.byteLength;
      this.counts.evictions++;
    }
    this.entries.set(key, entry);
    this.bytesHeld += size;
    return true;
  }

  private markTooLarge(key: string): void {
    this.counts.skipped++;
    if (this.tooLarge.size >= TOO_LARGE_KEYS) this.tooLarge.clear();
    this.tooLarge.add(key);
  }
}
