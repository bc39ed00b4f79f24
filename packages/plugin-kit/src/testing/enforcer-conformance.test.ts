import { describe, expect, it } from 'vitest';
import type { Enforcer } from '../enforcer.ts';
import { DesiredSet } from '../desired-set.ts';
import { sortCidrs } from '../block-list.ts';
import { enforcerConformance } from './enforcer-conformance.ts';

/**
 * A reference enforcer whose "target" is a Set: proves the suite is satisfiable and pins the
 * semantics of DesiredSet (a cut entry returns when higher ones leave).
 */
function memoryEnforcer(capacity: number, target: Set<string>): Enforcer {
  const desired = new DesiredSet();
  let committed = new Set<string>();
  const commit = () => {
    const { kept, cut } = desired.withinCapacity(capacity);
    committed = new Set(kept.map((e) => e.value));
    target.clear();
    for (const cidr of committed) target.add(cidr);
    return { enforced: kept.length, cut };
  };
  return {
    capacity,
    healthcheck: async () => ({ ok: true }),
    sync: async (entries, signal) => {
      signal?.throwIfAborted();
      desired.replace(entries);
      return commit();
    },
    apply: async (diff, signal) => {
      signal?.throwIfAborted();
      desired.apply(diff);
      return commit();
    },
    list: async (signal) => {
      signal?.throwIfAborted();
      return sortCidrs(target);
    },
    reconcile: async () => {
      const drifted = target.size !== committed.size || [...committed].some((c) => !target.has(c));
      return { ...commit(), drifted };
    },
    withdraw: async (signal) => {
      signal?.throwIfAborted();
      desired.clear();
      commit();
    },
    close: async () => undefined,
  };
}

enforcerConformance('memory reference', async ({ capacity }) => {
  const target = new Set<string>();
  return { enforcer: memoryEnforcer(capacity ?? Infinity, target), disturb: async () => target.clear() };
});

describe('DesiredSet', () => {
  it('brings a cut entry back when a higher one is removed', () => {
    const set = new DesiredSet();
    set.replace([
      { value: '192.0.2.1', score: 10 },
      { value: '192.0.2.2', score: 30 },
      { value: '192.0.2.3', score: 20 },
    ]);
    expect(set.withinCapacity(2)).toEqual({ kept: [{ value: '192.0.2.2/32', score: 30 }, { value: '192.0.2.3/32', score: 20 }], cut: 1 });
    set.apply({ add: [], remove: ['192.0.2.2/32'] });
    // Nothing cut: kept in insertion order, no sort spent.
    expect(set.withinCapacity(2)).toEqual({ kept: [{ value: '192.0.2.1/32', score: 10 }, { value: '192.0.2.3/32', score: 20 }], cut: 0 });
  });

  it('counts invalid input and keeps the newest score across calls', () => {
    const set = new DesiredSet();
    set.replace([{ value: '192.0.2.1', score: 10 }, { value: '192.0.2.1', score: 40 }, { value: '2001:db8::1', score: 5 }, { value: '300.1.1.1', score: 5 }]);
    expect(set.invalid).toBe(2);
    expect(set.entries()).toEqual([{ value: '192.0.2.1/32', score: 40 }]);
    set.apply({ add: [{ value: '192.0.2.1/32', score: 15 }], remove: ['nonsense'] });
    expect(set.invalid).toBe(1);
    expect(set.entries()).toEqual([{ value: '192.0.2.1/32', score: 15 }]);
  });
});
