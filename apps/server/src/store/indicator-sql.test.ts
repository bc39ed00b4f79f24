import { describe, expect, it } from 'vitest';
import { MAX_INDICATOR_TAGS, mergeTags } from './indicator-sql.ts';

describe('mergeTags', () => {
  it('keeps the known tags first, adds new ones once, in order', () => {
    expect(mergeTags(['emotet', 'loader'], ['loader', 'c2', 'c2', 'emotet'])).toEqual(['emotet', 'loader', 'c2']);
    expect(mergeTags(['a'], undefined)).toEqual(['a']);
    expect(mergeTags([], [])).toEqual([]);
  });

  it(`stops at ${MAX_INDICATOR_TAGS} tags: later reports add events, not tags`, () => {
    const full = Array.from({ length: MAX_INDICATOR_TAGS }, (_, i) => `t${i}`);
    expect(mergeTags(full, ['one-more'])).toEqual(full);
    expect(mergeTags(full.slice(0, 99), ['x', 'y'])).toEqual([...full.slice(0, 99), 'x']);
  });
});
