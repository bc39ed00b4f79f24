/**
 * Port-scan detection: distinct destination ports per source inside a sliding window. A source
 * that reaches `threshold` ports is a scan: reported once, as one attempt, then quiet until its
 * window has passed (a long scan yields one detection per window). While a source is quiet its
 * probes belong to the scan already counted (`inScan`).
 */
export class ScanWindows {
  private readonly sources = new Map<string, { ports: Map<number, number>; quietUntil: number }>();

  constructor(
    private readonly threshold: number,
    private readonly windowSeconds: number,
    private readonly maxSources = 50_000,
  ) {}

  /** Records a probe; returns the number of distinct ports when it completes a scan. */
  push(src: string, port: number, ts: number): number | undefined {
    let state = this.sources.get(src);
    if (state) this.sources.delete(src);
    else state = { ports: new Map(), quietUntil: -Infinity };
    this.sources.set(src, state);
    if (this.sources.size > this.maxSources) this.sources.delete(this.sources.keys().next().value!);
    if (ts < state.quietUntil) return undefined;
    const from = ts - this.windowSeconds;
    for (const [p, seen] of state.ports) if (seen <= from) state.ports.delete(p);
    state.ports.delete(port);
    state.ports.set(port, ts);
    if (state.ports.size < this.threshold) return undefined;
    const count = state.ports.size;
    state.ports.clear();
    state.quietUntil = ts + this.windowSeconds;
    return count;
  }

  /** Whether a probe of `src` at `ts` is part of a scan already detected (its quiet window). */
  inScan(src: string, ts: number): boolean {
    const state = this.sources.get(src);
    return state !== undefined && ts < state.quietUntil;
  }

  get tracked(): number {
    return this.sources.size;
  }
}

/**
 * Connection attempts already seen: the kernel logs a dropped TCP SYN again at each
 * retransmission (1 s, 3 s, 7 s, … after the first, up to about two minutes), each time with the
 * same source port. Those lines are one connection attempt. Bounded; the oldest go first.
 */
export class SeenConnections {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly holdSeconds = 130,
    private readonly maxEntries = 100_000,
  ) {}

  /** True when this connection (source, source port, destination, port, protocol) was seen within the hold time. */
  repeat(key: string, ts: number): boolean {
    const at = this.seen.get(key);
    if (at !== undefined) this.seen.delete(key);
    this.seen.set(key, ts);
    if (this.seen.size > this.maxEntries) {
      let drop = Math.ceil(this.maxEntries / 10);
      for (const old of this.seen.keys()) {
        if (drop-- <= 0) break;
        this.seen.delete(old);
      }
    }
    return at !== undefined && ts - at <= this.holdSeconds;
  }

  get size(): number {
    return this.seen.size;
  }
}
