import { describe, expect, it } from 'vitest';
import { CoinLedger, type CoinAccounts } from './ledger.ts';

/** The two conditional statements of the organizations store, over a number, counting calls. */
function accounts(balance: number) {
  const state = { balance, debitCalls: [] as number[], refundCalls: [] as number[] };
  const impl: CoinAccounts = {
    async debit(_org, amount) {
      state.debitCalls.push(amount);
      await Promise.resolve();
      if (state.balance < amount) return undefined;
      state.balance -= amount;
      return state.balance;
    },
    async refund(_org, amount) {
      state.refundCalls.push(amount);
      state.balance += amount;
      return state.balance;
    },
  };
  return { state, impl };
}

describe('CoinLedger', () => {
  it('combines concurrent debits of one organization into few statements, each request seeing its own balance', async () => {
    const { state, impl } = accounts(100);
    const ledger = new CoinLedger(impl);
    const results = await Promise.all(Array.from({ length: 10 }, () => ledger.debit(1, 2)));
    expect(state.balance).toBe(80);
    expect([...results].sort((a, b) => b! - a!)).toEqual([98, 96, 94, 92, 90, 88, 86, 84, 82, 80]);
    expect(state.debitCalls.length).toBeLessThan(10);
  });

  it('never grants more than the balance covers: a batch that does not fit is taken request by request', async () => {
    const { state, impl } = accounts(7);
    const ledger = new CoinLedger(impl);
    const results = await Promise.all(Array.from({ length: 5 }, () => ledger.debit(1, 2)));
    expect(results.filter((r) => r !== undefined)).toHaveLength(3);
    expect(results.filter((r) => r === undefined)).toHaveLength(2);
    expect(state.balance).toBe(1);
  });

  it('returns refunds and propagates store failures to every waiting request', async () => {
    const { state, impl } = accounts(10);
    const ledger = new CoinLedger(impl);
    await ledger.debit(1, 4);
    expect(await ledger.refund(1, 4)).toBe(10);
    expect(state.refundCalls).toEqual([4]);
    const failing = new CoinLedger({ debit: () => Promise.reject(new Error('store down')), refund: impl.refund });
    const settled = await Promise.allSettled([failing.debit(1, 1), failing.debit(1, 1)]);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    expect(await failing.debit(2, 1).catch((e: Error) => e.message)).toBe('store down');
  });

  it('leaves small balances exact: no lease below divisor × min', async () => {
    const { state, impl } = accounts(4000);
    const ledger = new CoinLedger(impl, { max: 1024, divisor: 64, min: 64 });
    for (let i = 0; i < 5; i++) await ledger.debit(1, 1);
    expect(state.debitCalls).toEqual([1, 1, 1, 1, 1]);
    expect(ledger.unspent(1)).toBe(0);
    await ledger.close();
  });

  it('with a large balance pays from a lease: few statements, exact balances, unspent coins given back on close', async () => {
    const { state, impl } = accounts(1_000_000);
    const ledger = new CoinLedger(impl, { max: 1000, divisor: 64, min: 64, idleMs: 60_000 });
    const seen: Array<number | undefined> = [];
    for (let round = 0; round < 50; round++) seen.push(...(await Promise.all(Array.from({ length: 40 }, () => ledger.debit(7, 3)))));
    // 2,000 requests of 3 coins: the first statement learns the balance, then one statement per 1,000 coins leased.
    expect(state.debitCalls.length).toBeLessThanOrEqual(10);
    expect(seen.every((r) => r !== undefined)).toBe(true);
    // What every request saw is the balance after its own charge, as if charged one by one.
    expect(seen.at(-1)).toBe(1_000_000 - 6000);
    expect(new Set(seen).size).toBe(2000);
    expect(state.balance + ledger.unspent(7)).toBe(1_000_000 - 6000);
    expect(ledger.shown({ id: 7, debit_tokens: 1_000_000 - state.balance })).toEqual({ id: 7, debit_tokens: 6000 });
    // A failed request's refund goes back into the lease.
    expect(await ledger.refund(7, 3)).toBe(1_000_000 - 5997);
    await ledger.close();
    expect(ledger.unspent(7)).toBe(0);
    expect(state.balance).toBe(1_000_000 - 5997);
  });

  it('gives an idle lease back by itself', async () => {
    const { state, impl } = accounts(100_000);
    const ledger = new CoinLedger(impl, { max: 500, divisor: 64, min: 64, idleMs: 40 });
    await ledger.debit(1, 1);
    await ledger.debit(1, 1);
    expect(ledger.unspent(1)).toBeGreaterThan(0);
    for (const end = Date.now() + 10_000; ledger.unspent(1) > 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
    expect(ledger.unspent(1)).toBe(0);
    expect(state.balance).toBe(100_000 - 2);
    await ledger.close();
  });

  it('two replicas leasing from one balance never spend more than it holds', async () => {
    const { state, impl } = accounts(20_000);
    const replicas = [new CoinLedger(impl, { max: 2000, divisor: 4, min: 16, idleMs: 60_000 }), new CoinLedger(impl, { max: 2000, divisor: 4, min: 16, idleMs: 60_000 })];
    let granted = 0;
    for (let round = 0; round < 400; round++) {
      const results = await Promise.all(replicas.flatMap((ledger) => Array.from({ length: 8 }, () => ledger.debit(1, 7))));
      granted += results.filter((r) => r !== undefined).length;
    }
    await Promise.all(replicas.map((l) => l.close()));
    // 3,200 requests of 7 coins ask for 22,400: at most 2,857 fit, and the books balance exactly.
    expect(granted * 7).toBeLessThanOrEqual(20_000);
    expect(state.balance).toBe(20_000 - granted * 7);
    expect(state.balance).toBeGreaterThanOrEqual(0);
    // Leases shrink with the balance, so the replicas end close to empty.
    expect(state.balance).toBeLessThan(7 * 2 * 16);
  });
});
