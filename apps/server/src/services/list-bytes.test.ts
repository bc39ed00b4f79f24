import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { liveScore } from '@rampart/scoring';
import { ByteWriter, floorSeconds } from './list-bytes.ts';

/** What `write` puts into a fresh writer, as text. */
function written(write: (w: ByteWriter) => void, capacity = 4): string {
  const w = new ByteWriter(capacity);
  write(w);
  return w.take().toString('utf8');
}

const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');

describe('ByteWriter writes the bytes of its string twins', () => {
  it('fixed2 is toFixed(2): live scores, halves, ties and values the float product rounds across', () => {
    const cases = [0, 0.005, 0.015, 0.125, 1.005, 1.995, 2.675, 8.345, 10.235, 999.995, 1000, 1e-300, 0.0049999999999, 123.456, 5e12];
    for (const x of cases) expect(written((w) => w.fixed2(x)), String(x)).toBe(x.toFixed(2));
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e6, noNaN: true }), (x) => written((w) => w.fixed2(x)) === x.toFixed(2)),
      { numRuns: 20_000 },
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: -10, max: 20_000_000 }), (s0, age) => {
        const x = liveScore(s0, age);
        return written((w) => w.fixed2(x)) === x.toFixed(2);
      }),
      { numRuns: 20_000 },
    );
    // Every hundredth and the ties between them, as decimals parse.
    for (let n = 0; n <= 100_000; n++) {
      for (const x of [n / 100, (n + 0.5) / 100]) expect(written((w) => w.fixed2(x))).toBe(x.toFixed(2));
    }
  });

  it('isoSeconds is toISOString for whole seconds, also across days and out of the fast range', () => {
    for (const s of [0, 59, 86_399, 86_400, 951_782_400, 1_700_000_000, 253_402_300_799, 253_402_300_800, -1, 1.5]) {
      expect(written((w) => w.isoSeconds(s)), String(s)).toBe(new Date(s * 1000).toISOString());
    }
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 253_402_300_799 }), { minLength: 1, maxLength: 20 }), (seconds) => {
        // One writer for the whole line: the cached day must follow each value.
        const expected = seconds.map((s) => new Date(s * 1000).toISOString()).join(',');
        return written((w) => seconds.forEach((s, k) => (k > 0 && w.byte(44), w.isoSeconds(s)))) === expected;
      }),
      { numRuns: 2_000 },
    );
  });

  it('floorSeconds rounds epoch microseconds down exactly, at every boundary', () => {
    const exact = (micros: number) => {
      const b = BigInt(micros);
      const q = b / 1_000_000n;
      return Number(b < 0n && q * 1_000_000n !== b ? q - 1n : q);
    };
    fc.assert(fc.property(fc.integer({ min: -(2 ** 52), max: 2 ** 53 - 1 }), (u) => floorSeconds(u) === exact(u)), { numRuns: 20_000 });
    for (const s of [0, 1, 1_795_000_000, -1, 2 ** 33]) {
      for (const u of [s * 1e6 - 1, s * 1e6, s * 1e6 + 1, s * 1e6 + 999_999]) expect(floorSeconds(u), String(u)).toBe(exact(u));
    }
  });

  it('int, address and network are String, dotted decimal and displayIp', () => {
    fc.assert(fc.property(fc.maxSafeInteger(), (n) => written((w) => w.int(n)) === String(n)));
    for (const n of [0, 9, 10, -1, -10, 2 ** 31, -(2 ** 31)]) expect(written((w) => w.int(n))).toBe(String(n));
    fc.assert(fc.property(fc.integer({ min: 0, max: 0xffffffff }), (n) => written((w) => w.address(n)) === dotted(n)));
    expect(written((w) => w.network(0x0a000100, 24))).toBe('10.0.1.0/24');
    expect(written((w) => w.network(0xffffffff, 32))).toBe('255.255.255.255');
    expect(written((w) => w.network(0, 0))).toBe('0.0.0.0/0');
  });

  it('grows past its capacity, writes UTF-8 text, and starts afresh after take', () => {
    const w = new ByteWriter(1);
    const parts: string[] = [];
    for (let k = 0; k < 5_000; k++) {
      w.text('Öl "AS", ');
      w.int(k);
      parts.push(`Öl "AS", ${k}`);
    }
    const first = w.take();
    expect(first.toString('utf8')).toBe(parts.join(''));
    const next = Buffer.from('a next b');
    w.range(next, 2, 6);
    expect(w.take().toString()).toBe('next');
    // The first piece is not overwritten by later writes.
    expect(first.toString('utf8')).toBe(parts.join(''));
  });
});
