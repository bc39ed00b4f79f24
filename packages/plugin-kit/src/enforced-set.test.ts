import { describe, expect, it } from 'vitest';
import { EnforcedSet } from './enforced-set.ts';

const sorted = (xs: Iterable<string>) => [...xs].sort();

describe('EnforcedSet', () => {
  it('reports only what changed while nothing is cut', () => {
    const set = new EnforcedSet(10);
    expect(set.replace([{ cidr: '192.0.2.1', score: 1 }, { cidr: '192.0.2.2', score: 1 }])).toEqual({
      added: ['192.0.2.1/32', '192.0.2.2/32'],
      removed: [],
    });
    const change = set.apply({
      add: [{ cidr: '192.0.2.3', score: 5 }, { cidr: '192.0.2.1/32', score: 9 }, { cidr: '192.0.2.2', score: 2 }],
      remove: ['192.0.2.2/32', '192.0.2.1', '203.0.113.5'],
    });
    // .2 removed and re-added: untouched; .1 removed then re-added: untouched; .3 new.
    expect(change).toEqual({ added: ['192.0.2.3/32'], removed: [] });
    expect(set.apply({ add: [], remove: ['192.0.2.1'] })).toEqual({ added: [], removed: ['192.0.2.1/32'] });
    expect(sorted(set.enforced)).toEqual(['192.0.2.2/32', '192.0.2.3/32']);
  });

  it('recomputes the cut when the capacity binds, bringing cut entries back', () => {
    const set = new EnforcedSet(2);
    set.replace([{ cidr: '192.0.2.1', score: 10 }, { cidr: '192.0.2.2', score: 30 }]);
    expect(set.apply({ add: [{ cidr: '192.0.2.3', score: 20 }], remove: [] })).toEqual({ added: ['192.0.2.3/32'], removed: ['192.0.2.1/32'] });
    expect(set.cut).toBe(1);
    expect(set.apply({ add: [], remove: ['192.0.2.2'] })).toEqual({ added: ['192.0.2.1/32'], removed: ['192.0.2.2/32'] });
    expect(set.cut).toBe(0);
    expect(sorted(set.enforced)).toEqual(['192.0.2.1/32', '192.0.2.3/32']);
  });
});
