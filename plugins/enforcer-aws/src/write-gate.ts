import { abortable } from '@rampart/plugin-kit';

/**
 * Spaces calls at least `intervalMs` apart, measured from when the previous one was really let
 * through (WAFv2 allows about one write per second). Callers queue in order.
 */
export class WriteGate {
  private chain: Promise<void> = Promise.resolve();
  private last = -Infinity;

  constructor(private readonly intervalMs: number) {}

  /** Resolves at the caller's turn; an aborted `signal` releases the caller at once (its turn still passes). */
  wait(signal?: AbortSignal): Promise<void> {
    const turn = this.chain.then(async () => {
      // A loop, because a timer may fire a millisecond before its time.
      for (let left = this.last + this.intervalMs - Date.now(); left > 0; left = this.last + this.intervalMs - Date.now()) {
        await new Promise((r) => setTimeout(r, left));
      }
      this.last = Date.now();
    });
    this.chain = turn;
    return abortable(turn, signal);
  }
}
