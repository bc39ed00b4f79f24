import { describe, expect, it } from 'vitest';
import { CoinLedger, type CoinAccounts } from './coin-ledger.ts';

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
});
