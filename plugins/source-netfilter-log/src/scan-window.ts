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
