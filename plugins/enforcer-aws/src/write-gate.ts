/** Spaces calls at least `intervalMs` apart (WAFv2 allows about one write per second per set). */
export class WriteGate {
  private next = 0;
  constructor(private readonly intervalMs: number) {}

  async wait(): Promise<void> {
    const now = Date.now();
    const at = Math.max(now, this.next);
    this.next = at + this.intervalMs;
    if (at > now) await new Promise((r) => setTimeout(r, at - now));
  }
}
