import { describe, expect, it } from 'vitest';
import { SeenTransactions, uniqueIdOf } from './transactions.ts';

describe('SeenTransactions', () => {
  it('counts a transaction once and stays bounded', () => {
    const seen = new SeenTransactions(10);
    expect([seen.attempts('a'), seen.attempts('a'), seen.attempts(undefined), seen.attempts(undefined)]).toEqual([1, 0, 1, 1]);
    for (let i = 0; i < 10; i++) seen.attempts(`t${i}`);
    expect(seen.size).toBe(10); // 11 ids: the oldest tenth went
    expect(seen.attempts('a')).toBe(1); // forgotten, so counted again
    expect(seen.attempts('t9')).toBe(0);
  });

  it('reads the unique_id tag', () => {
    expect(uniqueIdOf('Access denied [id "1"] [unique_id "Urf@f12qgHIAACrFOlgAAABA"]')).toBe('Urf@f12qgHIAACrFOlgAAABA');
    expect(uniqueIdOf('Access denied [id "1"]')).toBeUndefined();
  });
});
