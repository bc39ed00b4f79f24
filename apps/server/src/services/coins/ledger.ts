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

export interface LeaseOptions {
  /** Most coins one lease takes. 0 turns leasing off (every debit reaches the store). */
  max: number;
  /** A lease never takes more than balance / divisor, so small balances stay exact. */
  divisor: number;
  /** A lease smaller than this is not taken: the organization is charged statement by statement. */
  min: number;
  /** Unspent coins of a lease unused this long go back to the store. */
  idleMs: number;
}

export const DEFAULT_LEASE: LeaseOptions = { max: 1024, divisor: 64, min: 64, idleMs: 1000 };

interface Lease {
  /** Coins taken from the store and not yet spent by a request. */
  allowance: number;
  /** The store's balance after the last statement of this replica (leases included as spent). */
  stored: number;
  lastUse: number;
  timer: ReturnType<typeof setInterval> | null;
}

/**
 * Charges coins for requests. Two modes, chosen per organization from the balance the store
 * last reported:
 *
 * - Exact (small balances): the debits of concurrent requests of one organization are combined
 *   into one conditional UPDATE per round trip. A batch is taken whole only when the balance
 *   covers all of it; otherwise its requests are debited one by one, each with its own
 *   condition, so none is granted without being paid and the balance never goes below zero on
 *   any number of replicas.
 * - Leased (balance >= divisor × min): the statement that pays a batch also takes a lease of
 *   up to `max` coins (never more than balance / divisor) into this replica's memory, and later
 *   requests are paid from it without a round trip. Leases are taken by the same conditional
 *   UPDATE, so replicas together still never spend more than the balance. Unspent coins go back
 *   after `idleMs` without use and when the app closes; a replica that crashes loses at most its
 *   unspent lease. While another replica holds a lease, this one may see up to that many coins
 *   fewer, which is why small balances are never leased.
 *
 * The balance a request sees (X-Coins-Remaining) is the store's balance plus this replica's
 * unspent lease: exact with one replica.
 */
export class CoinLedger {
  private readonly queues = new Map<number, OrgQueue>();
  private readonly leases = new Map<number, Lease>();
  private readonly lease: LeaseOptions;

  constructor(
    private readonly accounts: CoinAccounts,
    lease: Partial<LeaseOptions> = {},
  ) {
    this.lease = { ...DEFAULT_LEASE, ...lease };
  }

  /** The balance left after this debit, or undefined when the balance does not cover it. */
  debit(orgId: number, amount: number): Promise<number | undefined> {
    const paid = this.debitFromLease(orgId, amount);
    if (paid !== undefined) return Promise.resolve(paid);
    return new Promise((resolve, reject) => {
      this.queue(orgId).debits.push({ amount, resolve, reject });
      this.kick(orgId);
    });
  }

  refund(orgId: number, amount: number): Promise<number> {
    const shown = this.refundToLease(orgId, amount);
    if (shown !== undefined) return Promise.resolve(shown);
    return new Promise((resolve, reject) => {
      this.queue(orgId).refunds.push({ amount, resolve, reject });
      this.kick(orgId);
    });
  }

  /**
   * `refund` without a promise when the organization has a lease here: the balance left, or
   * undefined when it has none (then `refund` goes to the store).
   */
  refundToLease(orgId: number, amount: number): number | undefined {
    const lease = this.leases.get(orgId);
    if (!lease) return undefined;
    // Coins the organization owns either way: back into the lease, returned with it.
    lease.allowance += amount;
    return lease.stored + lease.allowance;
  }

  /**
   * Pays `amount` from the organization's lease, without a promise: the balance left, or undefined
   * when the lease does not cover it (then `debit` asks the store).
   */
  debitFromLease(orgId: number, amount: number): number | undefined {
    const lease = this.leases.get(orgId);
    if (!lease || lease.allowance < amount) return undefined;
    lease.allowance -= amount;
    lease.lastUse = Date.now();
    return lease.stored + lease.allowance;
  }

  /** Coins this replica holds for the organization and has not spent (shown balances add them). */
  unspent(orgId: number): number {
    return this.leases.get(orgId)?.allowance ?? 0;
  }

  /** An organization's coin figures as the store has them, with this replica's unspent lease counted as unspent. */
  shown<T extends { id: number; debit_tokens: number }>(org: T): T {
    const held = this.unspent(org.id);
    return held === 0 ? org : { ...org, debit_tokens: org.debit_tokens - held };
  }

  /** Gives every unspent lease back to the store (app shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.leases.keys()].map((orgId) => this.giveBack(orgId)));
  }

  private async giveBack(orgId: number): Promise<void> {
    const lease = this.leases.get(orgId);
    if (!lease) return;
    this.leases.delete(orgId);
    if (lease.timer) clearInterval(lease.timer);
    // With the lease gone, a refund goes to the store.
    if (lease.allowance > 0) await this.refund(orgId, lease.allowance);
  }

  /** Size of the lease to take with the next statement for this organization (0: none). */
  private leaseSize(known: number | undefined): number {
    if (this.lease.max <= 0 || known === undefined) return 0;
    const size = Math.min(this.lease.max, Math.floor(known / this.lease.divisor));
    return size >= this.lease.min ? size : 0;
  }

  private readonly knownBalance = new Map<number, number>();

  private remember(orgId: number, stored: number, leased: number): void {
    this.knownBalance.set(orgId, stored);
    let lease = this.leases.get(orgId);
    if (!lease && leased > 0) {
      lease = { allowance: 0, stored, lastUse: Date.now(), timer: null };
      this.leases.set(orgId, lease);
      const timer = setInterval(() => {
        const l = this.leases.get(orgId);
        if (l && Date.now() - l.lastUse >= this.lease.idleMs) {
          this.giveBack(orgId).catch(() => {
            // The store is down: the coins stay spent; nothing else to do from a timer.
          });
        }
      }, Math.max(50, Math.floor(this.lease.idleMs / 2)));
      timer.unref?.();
      lease.timer = timer;
    }
    if (lease) {
      lease.stored = stored;
      lease.allowance += leased;
      lease.lastUse = Date.now();
    }
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

  private async takeDebits(orgId: number, queued: Array<Pending<number | undefined>>): Promise<void> {
    // Requests that queued while an earlier statement was taking a lease are paid from it.
    const batch: Array<Pending<number | undefined>> = [];
    for (const p of queued) {
      const paid = this.debitFromLease(orgId, p.amount);
      if (paid !== undefined) p.resolve(paid);
      else batch.push(p);
    }
    if (batch.length === 0) return;
    try {
      const total = sum(batch);
      const extra = this.leaseSize(this.knownBalance.get(orgId));
      let left = extra > 0 ? await this.accounts.debit(orgId, total + extra) : undefined;
      let leased = extra;
      if (left === undefined) {
        leased = 0;
        left = await this.accounts.debit(orgId, total);
      }
      if (left !== undefined) {
        this.remember(orgId, left, leased);
        const held = this.unspent(orgId);
        // As if charged in arrival order: each request sees the balance after its own charge.
        let running = left + held + total;
        for (const p of batch) p.resolve((running -= p.amount));
        return;
      }
      this.knownBalance.delete(orgId);
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
