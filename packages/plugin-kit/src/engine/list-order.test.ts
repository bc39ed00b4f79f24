import { describe, expect, it } from 'vitest';
import type { BlockEntry } from '../enforcer.ts';
import { ipv4Codec, sortByCodec } from './codec.ts';
import { DesiredSet } from './desired-set.ts';
import { orderInput, SortedEntries } from './list-order.ts';

const cidr = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`;
const sorted = (entries: BlockEntry[]) => sortByCodec(ipv4Codec, entries, (e) => e.value);

describe('SortedEntries', () => {
  it('merged batch after batch, it equals a fresh sort of the same set, scores included', () => {
    const order = new SortedEntries(ipv4Codec.key!);
    const set = new Map<string, number>();
    for (let i = 0; i < 2000; i += 2) set.set(cidr(i), i);
    const all = () => [...set].map(([value, score]) => ({ value, score }));
    const start = sorted(all());
    order.adopt(start, Float64Array.from(start, (e) => ipv4Codec.key!(e.value)));
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 50; round++) {
      const removed: string[] = [];
      const upserts: BlockEntry[] = [];
      for (let k = 0; k < 20; k++) {
        const value = cidr(rand(2100));
        if (rand(2) === 0 && !upserts.some((u) => u.value === value)) {
          // removing a value the set does not hold changes nothing
          if (!removed.includes(value)) removed.push(value);
          set.delete(value);
        } else {
          // added, or the same value with a new score; an upsert wins over a removal of the batch
          set.set(value, round * 1000 + k);
          const at = upserts.findIndex((u) => u.value === value);
          if (at >= 0) upserts.splice(at, 1);
          upserts.push({ value, score: round * 1000 + k });
        }
      }
      order.merge(removed.map(ipv4Codec.key!), upserts);
      expect(order.view()).toEqual(sorted(all()));
      expect(order.size).toBe(set.size);
      for (let probe = 0; probe < 20; probe++) {
        const value = cidr(rand(2100));
        expect(order.get(value)?.score).toBe(set.get(value));
      }
    }
  });

  it('finds only the canonical spelling it holds', () => {
    const order = new SortedEntries(ipv4Codec.key!);
    order.adopt([{ value: '10.0.0.0/24', score: 1 }], Float64Array.of(ipv4Codec.key!('10.0.0.0/24')));
    expect(order.get('10.0.0.0/24')).toEqual({ value: '10.0.0.0/24', score: 1 });
    expect(order.get('10.0.0.7/24')).toBeUndefined(); // same key, not the value held
    expect(order.get('10.0.0.0/32')).toBeUndefined();
    order.clear();
    expect(order.size).toBe(0);
    expect(order.get('10.0.0.0/24')).toBeUndefined();
  });
});

describe('orderInput', () => {
  it('keeps what DesiredSet.replace keeps, in list order, counting the same refusals', () => {
    let seed = 11;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 20; round++) {
      const input: BlockEntry[] = Array.from({ length: 300 }, () => {
        const pick = rand(20);
        if (pick === 0) return { value: 'not an address', score: 1 };
        if (pick === 1) return { value: cidr(rand(200)), score: Number.NaN };
        if (pick === 2) return { value: `10.0.${rand(4)}.77/24`, score: rand(50) }; // host bits: canonical differs
        return { value: rand(2) ? cidr(rand(200)) : cidr(rand(200)).slice(0, -3), score: rand(1000) }; // duplicates, both spellings
      });
      if (round % 2 === 0) input.sort((a, b) => ipv4Codec.compare(a.value, b.value));
      const desired = new DesiredSet();
      desired.replace(input);
      const got = orderInput(input, desired.canonicalKey);
      expect(got.entries).toEqual(sorted(desired.entries()));
      expect([...got.keys]).toEqual(got.entries.map((x) => ipv4Codec.key!(x.value)));
      expect(got.invalid).toBe(desired.invalid);
    }
  });

  it('copies the entries it keeps: a caller changing its objects later changes nothing cached', () => {
    const input = [{ value: '10.0.0.1/32', score: 5 }];
    const got = orderInput(input, new DesiredSet().canonicalKey);
    input[0]!.score = 99;
    expect(got.entries).toEqual([{ value: '10.0.0.1/32', score: 5 }]);
  });
});
