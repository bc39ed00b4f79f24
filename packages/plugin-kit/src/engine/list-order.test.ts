import { describe, expect, it } from 'vitest';
import type { BlockEntry } from '../enforcer.ts';
import { ipv4Codec, sortByCodec } from './codec.ts';
import { DesiredSet } from './desired-set.ts';
import { ListOrder, orderInput } from './list-order.ts';

const cidr = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`;
const sorted = (entries: BlockEntry[]) => sortByCodec(ipv4Codec, entries, (e) => e.value);

describe('ListOrder', () => {
  it('sorts a set given out of order, and hands out a copy', () => {
    const order = new ListOrder(ipv4Codec);
    const given = [{ value: '10.0.0.9/32', score: 1 }, { value: '10.0.0.0/24', score: 2 }, { value: '9.9.9.9/32', score: 3 }];
    const first = order.entries(() => given);
    expect(first.map((e) => e.value)).toEqual(['9.9.9.9/32', '10.0.0.0/24', '10.0.0.9/32']);
    first.reverse();
    expect(order.entries(() => []).map((e) => e.value)).toEqual(['9.9.9.9/32', '10.0.0.0/24', '10.0.0.9/32']);
  });

  it('patched by batches, it equals a fresh sort of the same set, scores included', () => {
    const order = new ListOrder(ipv4Codec);
    const set = new Map<string, number>();
    for (let i = 0; i < 2000; i += 2) set.set(cidr(i), i);
    const all = () => [...set].map(([value, score]) => ({ value, score }));
    order.entries(all);
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 50; round++) {
      const removed: string[] = [];
      const upserts: BlockEntry[] = [];
      for (let k = 0; k < 20; k++) {
        const value = cidr(rand(2100));
        if (rand(2) === 0 && set.has(value) && !upserts.some((u) => u.value === value)) {
          if (!removed.includes(value)) removed.push(value);
          set.delete(value);
        } else if (!removed.includes(value)) {
          set.set(value, round * 1000 + k); // added, or the same value with a new score
          const at = upserts.findIndex((u) => u.value === value);
          if (at >= 0) upserts.splice(at, 1);
          upserts.push({ value, score: round * 1000 + k });
        }
      }
      order.patch(removed, upserts);
      expect(order.entries(() => [])).toEqual(sorted(all()));
    }
  });

  it('a batch larger than an eighth of the set drops the cache and sorts again', () => {
    const order = new ListOrder(ipv4Codec);
    order.entries(() => [{ value: cidr(1), score: 1 }]);
    const big = Array.from({ length: 200 }, (_, i) => ({ value: cidr(i + 10), score: 5 }));
    order.patch([], big);
    const now = [{ value: cidr(3), score: 3 }, ...big];
    expect(order.entries(() => now)).toEqual(sorted(now));
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
      const got = orderInput(input, (raw) => desired.canonical(raw), ipv4Codec.key!);
      expect(got.entries).toEqual(sorted(desired.entries()));
      expect([...got.keys]).toEqual(got.entries.map((x) => ipv4Codec.key!(x.value)));
      expect(got.invalid).toBe(desired.invalid);
    }
  });

  it('copies the entries it keeps: a caller changing its objects later changes nothing cached', () => {
    const input = [{ value: '10.0.0.1/32', score: 5 }];
    const got = orderInput(input, (raw) => ipv4Codec.canonical(raw), ipv4Codec.key!);
    input[0]!.score = 99;
    expect(got.entries).toEqual([{ value: '10.0.0.1/32', score: 5 }]);
  });
});
