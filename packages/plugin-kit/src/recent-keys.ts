/**
 * A bounded memory of recently seen keys (a ModSecurity transaction id, a logged connection), for
 * parsers that count one attempt per request or connection however many lines it writes. Keys
 * are kept in insertion order (a key seen again moves to the end); when more than `maxKeys` are
 * held, the oldest tenth goes in one pass rather than one per insertion (a JavaScript Map used as
 * a queue skips every deleted slot at its front on each `keys().next()`).
 */
export class RecentKeys {
  private readonly keys = new Map<string, number>();

  constructor(
    private readonly maxKeys: number,
    /** How long after it was last seen a key still counts as seen (seconds); for ever by default. */
    private readonly holdSeconds = Infinity,
  ) {}

  /** Records `key` at `ts`; true when it had been seen within the hold time before. */
  seen(key: string, ts = 0): boolean {
    const at = this.keys.get(key);
    if (at !== undefined) this.keys.delete(key);
    this.keys.set(key, ts);
    if (this.keys.size > this.maxKeys) {
      let drop = Math.ceil(this.maxKeys / 10);
      for (const old of this.keys.keys()) {
        if (drop-- <= 0) break;
        this.keys.delete(old);
      }
    }
    return at !== undefined && ts - at <= this.holdSeconds;
  }

  get size(): number {
    return this.keys.size;
  }
}
