import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { EnforcedSet } from './enforced-set.ts';
import { keepTop } from '../block-list.ts';
import { ipv4Codec, sortByCodec, sortValues } from './codec.ts';
import { DesiredSet } from './desired-set.ts';

const sorted = (xs: Iterable<string>) => [...xs].sort();

describe('EnforcedSet', () => {
  it('reports only what changed while nothing is cut', () => {
    const set = new EnforcedSet(10);
    set.replace([{ value: '192.0.2.1', score: 1 }, { value: '192.0.2.2', score: 1 }]);
    expect(sorted(set.values())).toEqual(['192.0.2.1/32', '192.0.2.2/32']);
    const change = set.apply({
      add: [{ value: '192.0.2.3', score: 5 }, { value: '192.0.2.1/32', score: 9 }, { value: '192.0.2.2', score: 2 }],
      remove: ['192.0.2.2/32', '192.0.2.1', '203.0.113.5'],
    });
    // .1 and .2 removed and re-added in one diff: untouched; .3 new.
    expect(change).toEqual({ added: ['192.0.2.3/32'], removed: [] });
    expect(set.apply({ add: [], remove: ['192.0.2.1'] })).toEqual({ added: [], removed: ['192.0.2.1/32'] });
    expect(sorted(set.values())).toEqual(['192.0.2.2/32', '192.0.2.3/32']);
  });

  it('recomputes the cut when the capacity binds, bringing cut entries back', () => {
    const set = new EnforcedSet(2);
    set.replace([{ value: '192.0.2.1', score: 10 }, { value: '192.0.2.2', score: 30 }]);
    expect(set.apply({ add: [{ value: '192.0.2.3', score: 20 }], remove: [] })).toEqual({ added: ['192.0.2.3/32'], removed: ['192.0.2.1/32'] });
    expect(set.cut).toBe(1);
    expect(set.apply({ add: [], remove: ['192.0.2.2'] })).toEqual({ added: ['192.0.2.1/32'], removed: ['192.0.2.2/32'] });
    expect(set.cut).toBe(0);
    expect(sorted(set.values())).toEqual(['192.0.2.1/32', '192.0.2.3/32']);
  });

  it.each([false, true])('after any sequence of diffs, the change stream rebuilds exactly the top-capacity set (ordered: %s)', (ordered) => {
    const cidr = fc.integer({ min: 0, max: 15 }).map((i) => `192.0.2.${i}/32`);
    const entry = fc.record({ value: cidr, score: fc.integer({ min: 0, max: 5 }) });
    const diff = fc.record({ add: fc.array(entry, { maxLength: 6 }), remove: fc.array(cidr, { maxLength: 6 }) });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(entry, { maxLength: 10 }), fc.array(diff, { maxLength: 8 }), (capacity, start, diffs) => {
        const set = new EnforcedSet(capacity, ipv4Codec, undefined, ordered);
        set.replace(start);
        const target = new Set(set.values());
        const model = new Map<string, number>();
        for (const e of start) model.set(e.value, Math.max(model.get(e.value) ?? -Infinity, e.score));
        for (const d of diffs) {
          const change = set.apply(d);
          for (const c of change.removed) expect(target.delete(c)).toBe(true);
          for (const c of change.added) {
            expect(target.has(c)).toBe(false);
            target.add(c);
          }
          for (const c of d.remove) model.delete(c);
          const fresh = new Map<string, number>();
          for (const e of d.add) fresh.set(e.value, Math.max(fresh.get(e.value) ?? -Infinity, e.score));
          for (const [c, s] of fresh) model.set(c, s);
          const want = keepTop([...model].map(([c, s]) => ({ value: c, score: s })), capacity).kept.map((e) => e.value);
          expect(sorted(target)).toEqual(sorted(want));
          expect(sorted(set.values())).toEqual(sorted(want));
          if (ordered) expect(set.entries().map((e) => e.value)).toEqual(sortValues(ipv4Codec, want));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('DesiredSet in list order', () => {
  it('holds what the map layout holds, scores and refusals included, after any sequence of calls', () => {
    const raw = fc.oneof(
      fc.integer({ min: 0, max: 15 }).map((i) => `192.0.2.${i}/32`),
      fc.integer({ min: 0, max: 15 }).map((i) => `192.0.2.${i}`), // another spelling of the same value
      fc.constantFrom('192.0.2.0/28', '192.0.2.9/28', 'nonsense', '2001:db8::1'),
    );
    const entry = fc.record({ value: raw, score: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constant(Number.NaN)) });
    const call = fc.oneof(
      fc.record({ replace: fc.array(entry, { maxLength: 10 }) }),
      fc.record({ add: fc.array(entry, { maxLength: 6 }), remove: fc.array(raw, { maxLength: 6 }) }),
    );
    fc.assert(
      fc.property(fc.array(call, { maxLength: 10 }), (calls) => {
        const map = new DesiredSet();
        const list = new DesiredSet(ipv4Codec, undefined, true);
        expect(list.ordered).toBe(true);
        for (const c of calls) {
          for (const set of [map, list]) {
            if ('replace' in c) set.replace(c.replace);
            else set.apply(c);
          }
          expect(list.entries()).toEqual(sortByCodec(ipv4Codec, map.entries(), (e) => e.value));
          expect(list.invalid).toBe(map.invalid);
          expect(list.size).toBe(map.size);
          for (const value of map.values()) expect([list.has(value), list.score(value)]).toEqual([true, map.score(value)]);
          expect([...list.values()]).toEqual(list.entries().map((e) => e.value));
        }
      }),
      { numRuns: 300 },
    );
  });
});
