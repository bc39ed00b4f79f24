import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressIndex } from './address-index.ts';
import { emptyColumns, upsertRows, type ColumnRow } from './columns.ts';

const row = (id: number, addr: number, len: number): ColumnRow => ({ id, addr, len, score: 1, ts: 0, members: 0, events: 0, updated: 0, as: 0, cdn: 0 });

/** A network (host bits cleared) near the top or the bottom of the address space, where the radix digits differ. */
const net = fc.record({ high: fc.boolean(), offset: fc.integer({ min: 0, max: 1 << 20 }), len: fc.constantFrom(0, 1, 8, 16, 24, 28, 31, 32) }).map(({ high, offset, len }) => {
  const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
  return { addr: ((high ? 0xffffffff - offset : offset) & mask) >>> 0, len };
});

/** What the index must find: every (id, network) containing addr, longest prefix first, then by id. */
function brute(rows: Array<{ id: number; addr: number; len: number }>, addr: number): Array<[number, number, number]> {
  return rows
    .filter((r) => (r.len === 0 ? true : (addr >>> (32 - r.len)) === (r.addr >>> (32 - r.len))))
    .sort((a, b) => b.len - a.len || a.id - b.id)
    .map((r) => [r.id, r.addr, r.len]);
}

function found(index: AddressIndex, addr: number): Array<[number, number, number]> {
  const out: Array<[number, number, number]> = [];
  index.candidates(addr, (id, n, len) => out.push([id, n, len]));
  return out;
}

describe('AddressIndex', () => {
  it('finds every network holding an address, built from the columns and added since', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(net, { maxLength: 60, selector: (n) => `${n.addr}/${n.len}` }),
        fc.nat({ max: 60 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 8 }),
        (nets, split, picks) => {
          const rows = nets.map((n, k) => ({ id: 10 + k * 3, ...n }));
          const cols = emptyColumns(0);
          upsertRows(cols, rows.slice(0, split).map((r) => row(r.id, r.addr, r.len)));
          const index = new AddressIndex(cols);
          // The rest arrive later, as a catch-up brings them.
          for (const r of upsertRows(cols, rows.slice(split).map((r) => row(r.id, r.addr, r.len)))) index.add(r.addr, r.len, r.id);
          expect(index.added).toBe(Math.max(0, rows.length - split));
          const probes = [...picks.map((p) => (rows.length > 0 ? rows[p % rows.length]!.addr + (p % 3) : p >>> 0)), 0, 0xffffffff];
          for (const addr of probes) expect(found(index, addr >>> 0)).toEqual(brute(rows, addr >>> 0));
        },
      ),
      { seed: 20261127 },
    );
  });

  it('offers both ids when a network left under one id and came back under another', () => {
    const cols = emptyColumns(0);
    upsertRows(cols, [row(5, 0x2d4d0000, 16), row(7, 0x2d4d0901, 32)]);
    const index = new AddressIndex(cols);
    index.add(0x2d4d0000, 16, 9);
    expect(found(index, 0x2d4d0901)).toEqual([
      [7, 0x2d4d0901, 32],
      [5, 0x2d4d0000, 16],
      [9, 0x2d4d0000, 16],
    ]);
    expect(found(index, 0x01020304)).toEqual([]);
  });

  it('reports the rows whose network is new to the columns: new ids and ids that moved', () => {
    const cols = emptyColumns(0);
    upsertRows(cols, [row(1, 100, 32), row(2, 200, 32)]);
    const placed = upsertRows(cols, [row(1, 100, 32), row(2, 256, 24), row(3, 300, 32)]);
    expect(placed.map((r) => r.id).sort((a, b) => a - b)).toEqual([2, 3]);
  });
});
