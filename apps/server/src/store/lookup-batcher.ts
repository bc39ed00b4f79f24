/**
 * Single-flight batching of point look-ups: the look-ups a replica receives while its earlier
 * batches are in the database wait, and leave together as one statement (`= any($1)` / unnest),
 * whose result is fanned out to each caller.
 *
 * Freshness is exactly that of one query per request: a look-up only ever joins a batch that has
 * not been sent yet, so the statement that answers it starts after the look-up was asked and
 * sees every write committed before that (each statement takes its own snapshot).
 *
 * Equal keys waiting in the same batch are asked once and share the answer.
 */
export interface LookupBatcherOptions<K, R> {
  /** Identity of a key: look-ups with the same id in one batch are asked once. */
  id: (key: K) => string;
  /** Answers for `keys`, in their order (one statement). */
  run: (keys: readonly K[]) => Promise<R[]>;
  /** Batches in the database at once; further look-ups wait for one of them to return. */
  maxInFlight?: number;
  /** Most distinct keys in one statement. */
  maxBatch?: number;
}

interface Waiting<R> {
  resolve: (value: R) => void;
  reject: (err: unknown) => void;
}

export class LookupBatcher<K, R> {
  private readonly id: (key: K) => string;
  private readonly run: (keys: readonly K[]) => Promise<R[]>;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private inFlight = 0;
  /** The batch being gathered (not sent yet), by key id. */
  private pending = new Map<string, { key: K; waiting: Array<Waiting<R>> }>();
  private scheduled = false;

  constructor(options: LookupBatcherOptions<K, R>) {
    this.id = options.id;
    this.run = options.run;
    this.maxInFlight = Math.max(1, options.maxInFlight ?? 2);
    this.maxBatch = Math.max(1, options.maxBatch ?? 256);
  }

  load(key: K): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const id = this.id(key);
      let entry = this.pending.get(id);
      if (!entry) {
        entry = { key, waiting: [] };
        this.pending.set(id, entry);
      }
      entry.waiting.push({ resolve, reject });
      this.schedule();
    });
  }

  /**
   * A free slot sends what is gathered at the end of the current tick (look-ups parsed from the
   * same socket read join); with every slot busy, the batch leaves when a slot frees.
   */
  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.pending.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.maxInFlight && this.pending.size > 0) this.send();
    });
  }

  private send(): void {
    let batch: Array<{ key: K; waiting: Array<Waiting<R>> }>;
    if (this.pending.size <= this.maxBatch) {
      batch = [...this.pending.values()];
      this.pending = new Map();
    } else {
      batch = [];
      for (const [id, entry] of this.pending) {
        if (batch.length === this.maxBatch) break;
        batch.push(entry);
        this.pending.delete(id);
      }
    }
    this.inFlight += 1;
    void this.answer(batch).finally(() => {
      this.inFlight -= 1;
      this.schedule();
    });
  }

  private async answer(batch: Array<{ key: K; waiting: Array<Waiting<R>> }>): Promise<void> {
    let results: R[];
    try {
      results = await this.run(batch.map((e) => e.key));
    } catch (err) {
      if (batch.length === 1) {
        for (const w of batch[0]!.waiting) w.reject(err);
        return;
      }
      // One key the statement cannot take must not fail the others: each is asked on its own.
      await Promise.all(batch.map((entry) => this.answer([entry])));
      return;
    }
    batch.forEach((entry, i) => {
      for (const w of entry.waiting) w.resolve(results[i]!);
    });
  }
}
