import { describe, expect, it } from 'vitest';
import { RecentKeys } from './recent-keys.ts';

describe('RecentKeys', () => {
  it('tells a key seen before, within the hold time, and stays bounded', () => {
    const keys = new RecentKeys(10, 130);
    expect([keys.seen('a', 0), keys.seen('a', 1), keys.seen('a', 131), keys.seen('a', 262)]).toEqual([false, true, true, false]);
    for (let i = 0; i < 10; i++) keys.seen(`k${i}`, 300);
    expect(keys.size).toBe(10); // 11 keys: the oldest tenth ('a') went
    expect(keys.seen('a', 300)).toBe(false);
    expect(keys.seen('k9', 300)).toBe(true);
  });
});
