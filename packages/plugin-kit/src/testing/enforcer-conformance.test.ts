import { describe, expect, it } from 'vitest';
import { DesiredSet } from '../engine/desired-set.ts';
import { createEngineEnforcer } from '../engine/engine.ts';
import type { EnforcerAdapter } from '../engine/adapter.ts';
import type { Enforcer } from '../enforcer.ts';
import { enforcerConformance } from './enforcer-conformance.ts';
import { silentLogger as silent } from './loggers.ts';


/**
 * A reference target that is a Set, under the engine: proves the suite is satisfiable, and an
 * enforcer written by hand (no engine) is run too, to show the suite's engine test is a counted
 * skip for it rather than a failure.
 */
function memoryAdapter(target: Set<string>): EnforcerAdapter {
  return {
    read: async () => [...target],
    replaceAll: async (entries, signal) => {
      signal?.throwIfAborted();
      target.clear();
      for (const e of entries) target.add(e.value);
    },
    applyBatch: async (change, _all, signal) => {
      signal?.throwIfAborted();
      for (const value of change.remove) target.delete(value);
      for (const e of change.add) target.add(e.value);
    },
    removeAll: async () => target.clear(),
    probe: async () => undefined,
  };
}

enforcerConformance('memory reference (engine)', async ({ capacity }) => {
  const target = new Set<string>();
  const open = () => createEngineEnforcer(memoryAdapter(target), { capacity: capacity ?? Infinity, log: silent });
  return { enforcer: open(), reopen: async () => open(), disturb: async () => target.clear() };
});

/** The same target without the engine, written against the contract by hand. */
function handWritten(capacity: number, target: Set<string>): Enforcer {
  const desired = new DesiredSet();
  const commit = () => {
    const { kept, cut } = desired.withinCapacity(capacity);
    target.clear();
    for (const e of kept) target.add(e.value);
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
      return [...target].sort((a, b) => desired.codec.compare(a, b));
    },
    withdraw: async (signal) => {
      signal?.throwIfAborted();
      desired.clear();
      commit();
    },
    close: async () => undefined,
  };
}

enforcerConformance('memory, hand-written', async ({ capacity }) => {
  const target = new Set<string>();
  return { enforcer: handWritten(capacity ?? Infinity, target) };
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
