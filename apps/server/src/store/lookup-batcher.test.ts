import { describe, expect, it } from 'vitest';
import { LookupBatcher } from './lookup-batcher.ts';

/** A run function that records its batches and answers when told to. */
function controlled() {
  const batches: string[][] = [];
  const open: Array<{ keys: string[]; answer: () => void; fail: (err: Error) => void }> = [];
  const run = (keys: readonly string[]) =>
    new Promise<string[]>((resolve, reject) => {
      batches.push([...keys]);
      open.push({ keys: [...keys], answer: () => resolve(keys.map((k) => `answer ${k}`)), fail: reject });
    });
  return { batches, open, run };
}

/** Lets a freed slot send what waits (it sends on the next turn of the event loop). */
const tick = async () => {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('LookupBatcher', () => {
  it('asks concurrent look-ups in one batch, equal keys once, and gives each caller its answer', async () => {
    const c = controlled();
    const batcher = new LookupBatcher<string, string>({ id: (k) => k, run: c.run });
    const answers = Promise.all(['a', 'b', 'a', 'c', 'b'].map((k) => batcher.load(k)));
    await tick();
    expect(c.batches).toEqual([['a', 'b', 'c']]);
    c.open[0]!.answer();
    expect(await answers).toEqual(['answer a', 'answer b', 'answer a', 'answer c', 'answer b']);
  });

  it('never adds a look-up to a batch already sent: it waits for the next one (no answer older than the question)', async () => {
    const c = controlled();
    const batcher = new LookupBatcher<string, string>({ id: (k) => k, run: c.run, maxInFlight: 1 });
    const first = batcher.load('a');
    await tick();
    expect(c.batches).toEqual([['a']]);
    // Asked while the first batch is in the database: the same key is asked again, later.
    const second = batcher.load('a');
    const third = batcher.load('b');
    await tick();
    expect(c.batches).toEqual([['a']]);
    c.open[0]!.answer();
    expect(await first).toBe('answer a');
    await tick();
    expect(c.batches).toEqual([['a'], ['a', 'b']]);
    c.open[1]!.answer();
    expect(await Promise.all([second, third])).toEqual(['answer a', 'answer b']);
  });

  it('keeps at most maxInFlight batches in the database and at most maxBatch keys in one', async () => {
    const c = controlled();
    const batcher = new LookupBatcher<string, string>({ id: (k) => k, run: c.run, maxInFlight: 2, maxBatch: 3 });
    const all = Promise.all(Array.from({ length: 10 }, (_, i) => batcher.load(`k${i}`)));
    await tick();
    expect(c.batches).toEqual([['k0', 'k1', 'k2'], ['k3', 'k4', 'k5']]);
    c.open[0]!.answer();
    await tick();
    expect(c.batches.length).toBe(3);
    expect(c.batches[2]).toEqual(['k6', 'k7', 'k8']);
    c.open[1]!.answer();
    await tick();
    expect(c.batches[3]).toEqual(['k9']);
    c.open[2]!.answer();
    c.open[3]!.answer();
    expect((await all).length).toBe(10);
  });

  it('fails only the look-up the statement cannot take: a failed batch is asked again key by key', async () => {
    const batches: string[][] = [];
    const batcher = new LookupBatcher<string, string>({
      id: (k) => k,
      run: async (keys) => {
        batches.push([...keys]);
        if (keys.includes('bad')) throw new Error('invalid input syntax');
        return keys.map((k) => `answer ${k}`);
      },
    });
    const results = await Promise.allSettled(['a', 'bad', 'b', 'bad'].map((k) => batcher.load(k)));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      'answer a',
      'invalid input syntax',
      'answer b',
      'invalid input syntax',
    ]);
    expect(batches[0]).toEqual(['a', 'bad', 'b']);
    expect(batches.slice(1).sort()).toEqual([['a'], ['b'], ['bad']]);
    // The batcher keeps working after a failure.
    expect(await batcher.load('c')).toBe('answer c');
  });
});
