import { describe, expect, it } from 'vitest';
import { AuthFailureGuard } from './auth-failures.ts';

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
