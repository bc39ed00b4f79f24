import { describe, expect, it } from 'vitest';
import { WriteGate } from '../src/write-gate.ts';

describe('WriteGate', () => {
  it('lets queued calls through in order, each at least one interval after the previous', async () => {
    const gate = new WriteGate(120);
    const released: number[] = [];
    await Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        await gate.wait();
        released.push(i, Date.now());
      }),
    );
    const order = released.filter((_, k) => k % 2 === 0);
    const times = released.filter((_, k) => k % 2 === 1);
    expect(order).toEqual([0, 1, 2, 3]);
    // Lower bounds only: a busy machine lets them through later, never sooner.
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(119);
  });
});
