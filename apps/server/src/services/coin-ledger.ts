/** The two statements the ledger needs; `store.orgs` provides them. */
export interface CoinAccounts {
  /** Takes `amount` if the balance covers it (one conditional UPDATE); the balance left, or undefined. */
  debit(orgId: number, amount: number): Promise<number | undefined>;
  refund(orgId: number, amount: number): Promise<number>;
}

interface Pending<T> {
  amount: number;
  resolve: (value: T) => void;
  reject: (err: unknown) => void;
}

interface OrgQueue {
  debits: Array<Pending<number | undefined>>;
  refunds: Array<Pending<number>>;
  busy: boolean;
}

/**
 * Combines the coin debits of concurrent requests of one organization into one conditional
 * UPDATE per round trip. With one statement in flight per organization and replica, requests
 * no longer queue one by one on the organization's row lock, and accounting stays exact:
 * a batch is taken whole only when the balance covers all of it; otherwise its requests are
 * debited one by one, each with its own condition, so none is granted without being paid
 * and the balance never goes below zero on any number of replicas.
 */
export class CoinLedger {
  private readonly queues = new Map<number, OrgQueue>();

  constructor(private readonly accounts: CoinAccounts) {}

  /** The balance left after this debit, or undefined when the balance does not cover it. */
  debit(orgId: number, amount: number): Promise<number | undefined> {
    return new Promise((resolve, reject) => {
      this.queue(orgId).debits.push({ amount, resolve, reject });
      this.kick(orgId);
    });
  }

  refund(orgId: number, amount: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue(orgId).refunds.push({ amount, resolve, reject });
      this.kick(orgId);
    });
  }

  private queue(orgId: number): OrgQueue {
    let q = this.queues.get(orgId);
    if (!q) {
      q = { debits: [], refunds: [], busy: false };
      this.queues.set(orgId, q);
    }
    return q;
  }

  private kick(orgId: number): void {
    const q = this.queue(orgId);
    if (q.busy) return;
    q.busy = true;
    void this.drain(orgId, q);
  }

  private async drain(orgId: number, q: OrgQueue): Promise<void> {
    while (q.debits.length > 0 || q.refunds.length > 0) {
      const refunds = q.refunds.splice(0);
      if (refunds.length > 0) await this.settle(refunds, () => this.accounts.refund(orgId, sum(refunds)));
      const debits = q.debits.splice(0);
      if (debits.length > 0) await this.takeDebits(orgId, debits);
    }
    q.busy = false;
    this.queues.delete(orgId);
  }

  private async takeDebits(orgId: number, batch: Array<Pending<number | undefined>>): Promise<void> {
    try {
      const total = sum(batch);
      const left = await this.accounts.debit(orgId, total);
      if (left !== undefined) {
        // As if charged in arrival order: each request sees the balance after its own charge.
        let running = left + total;
        for (const p of batch) p.resolve((running -= p.amount));
        return;
      }
      if (batch.length === 1) return batch[0]!.resolve(undefined);
      for (const p of batch) await this.settle([p], () => this.accounts.debit(orgId, p.amount));
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }

  private async settle<T>(batch: Array<Pending<T>>, run: () => Promise<T>): Promise<void> {
    try {
      const value = await run();
      for (const p of batch) p.resolve(value);
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}

function sum(batch: Array<{ amount: number }>): number {
  return batch.reduce((n, p) => n + p.amount, 0);
}
