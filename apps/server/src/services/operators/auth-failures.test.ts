import { describe, expect, it } from 'vitest';
import { AuthFailureGuard, UnknownKeyBudget, UnknownKeyIds, networkOf } from './auth-failures.ts';

describe('AuthFailureGuard', () => {
  const limits = { budget: 3, lockMs: 1000, maxLockMs: 4000, windowMs: 10_000, maxSubjects: 2 };

  it('locks a subject at its budget and doubles each further lock-out up to the cap', () => {
    let now = 0;
    const guard = new AuthFailureGuard(limits, () => now);
    const lockOuts: number[] = [];
    for (let round = 0; round < 4; round += 1) {
      expect(guard.fail('a')).toBe(0);
      expect(guard.fail('a')).toBe(0);
      const started = guard.fail('a');
      lockOuts.push(started);
      expect(guard.lockedFor('a')).toBe(started);
      now += started;
      expect(guard.lockedFor('a')).toBe(0);
    }
    expect(lockOuts).toEqual([1000, 2000, 4000, 4000]);
  });

  it('forgets failures outside the window and the least recently failing subject beyond its size', () => {
    let now = 0;
    const guard = new AuthFailureGuard(limits, () => now);
    guard.fail('a');
    guard.fail('a');
    now += 10_001;
    expect(guard.fail('a')).toBe(0);
    guard.fail('b');
    guard.fail('c');
    expect(guard.size).toBe(2);
    guard.fail('a');
    expect(guard.fail('a')).toBe(0);
  });
});

describe('UnknownKeyBudget', () => {
  it('spends the budget of all networks and of one network per window, then renews both', () => {
    let now = 1_000;
    const budget = new UnknownKeyBudget({ perWindow: 5, perNetworkPerWindow: 2, windowMs: 60_000, maxNetworks: 10 }, () => now);
    budget.fail('a');
    budget.fail('a');
    expect(budget.spent('a')).toEqual({ subject: 'network', ms: 60_000 });
    expect(budget.spent('b')).toBeNull();
    budget.fail('b');
    budget.fail('c');
    now += 15_000;
    budget.fail('d');
    expect(budget.spent('e')).toEqual({ subject: 'all', ms: 45_000 });
    now += 45_000;
    expect(budget.spent('a')).toBeNull();
    expect(budget.spent('e')).toBeNull();
  });

  it('keeps at most maxNetworks networks, forgetting the oldest first', () => {
    const budget = new UnknownKeyBudget({ perWindow: 100, perNetworkPerWindow: 1, windowMs: 60_000, maxNetworks: 2 }, () => 0);
    budget.fail('a');
    budget.fail('b');
    budget.fail('c');
    expect(budget.spent('a')).toBeNull();
    expect(budget.spent('b')?.subject).toBe('network');
    expect(budget.spent('c')?.subject).toBe('network');
  });
});

describe('UnknownKeyIds', () => {
  it('remembers an id for its time to live, at most max ids', () => {
    let now = 0;
    const ids = new UnknownKeyIds(1_000, 2, () => now);
    ids.add('x');
    ids.add('y');
    ids.add('z');
    expect(ids.size).toBe(2);
    expect([ids.has('x'), ids.has('y'), ids.has('z')]).toEqual([false, true, true]);
    now = 1_000;
    expect(ids.has('y')).toBe(false);
    expect(ids.size).toBe(1);
  });
});

describe('networkOf', () => {
  it('is the /24 of an IPv4 address (mapped too) and the /48 of an IPv6 one', () => {
    expect(networkOf('127.0.5.77')).toBe('127.0.5.0/24');
    expect(networkOf('::ffff:203.0.113.9')).toBe('203.0.113.0/24');
    expect(networkOf('2001:db8:abcd:12::1')).toBe('2001:db8:abcd::/48');
    expect(networkOf('2001:DB8::1')).toBe('2001:db8:0::/48');
    expect(networkOf('::1')).toBe('0:0:0::/48');
  });
});
