import { describe, expect, it } from 'vitest';
import { serializer } from './serial.ts';

describe('serializer', () => {
  it('runs calls one at a time in call order, isolating failures', async () => {
    const serial = serializer();
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = serial(async () => {
      log.push('a start');
      await gate;
      log.push('a end');
      throw new Error('a failed');
    });
    const second = serial(async () => {
      log.push('b');
      return 2;
    });
    await Promise.resolve();
    expect(log).toEqual(['a start']);
    release();
    await expect(first).rejects.toThrow('a failed');
    await expect(second).resolves.toBe(2);
    expect(log).toEqual(['a start', 'a end', 'b']);
  });
});
