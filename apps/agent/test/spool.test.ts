import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Spool, SpoolFullError } from '../src/runtime/spool.ts';

const dirs: string[] = [];
afterEach(async () => {
  while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
});
async function dir() {
  const d = await mkdtemp(join(tmpdir(), 'spool-'));
  dirs.push(d);
  return d;
}
const body = (i: number) => ({ ip: `45.33.${i >> 8}.${i & 255}`, confidence: 0.8, source: 'ssh_log' });

describe('report spool', () => {
  it('replays unacknowledged reports in order after a reopen, with the same ids, and continues the sequence', async () => {
    const d = await dir();
    const a = await Spool.open({ dir: d });
    const written = [];
    for (let i = 1; i <= 5; i++) written.push(await a.append(body(i)));
    await a.ack(2);
    // No close(): a crash leaves the file handle as it is.
    const b = await Spool.open({ dir: d });
    expect(b.peek(10)).toEqual(written.slice(2));
    const next = await b.append(body(6));
    expect(next.seq).toBe(6);
    expect(b.depth).toBe(4);
    await b.ack(6);
    await b.close();
    const c = await Spool.open({ dir: d });
    expect(c.depth).toBe(0);
    expect((await c.append(body(7))).seq).toBe(7);
    await c.close();
  });

  it('refuses a report whose key was spooled before, also after a reopen and after it was acknowledged', async () => {
    const d = await dir();
    const a = await Spool.open({ dir: d });
    const first = a.appendSync(body(1), 'ssh_log|45.33.0.1|100');
    expect(first?.seq).toBe(1);
    expect(a.appendSync(body(1), 'ssh_log|45.33.0.1|100')).toBeUndefined();
    await a.ack(1);
    const b = await Spool.open({ dir: d });
    expect(b.depth).toBe(0);
    expect(b.appendSync(body(1), 'ssh_log|45.33.0.1|100')).toBeUndefined();
    expect(b.appendSync(body(1), 'ssh_log|45.33.0.1|160')?.seq).toBe(2);
    await b.close();
  });

  it('drops a torn last line (an append that never returned) and keeps the rest', async () => {
    const d = await dir();
    const a = await Spool.open({ dir: d });
    await a.append(body(1));
    await a.close();
    await appendFile(join(d, 'reports.log'), '{"seq":2,"id":"x","at":1,"bo');
    const b = await Spool.open({ dir: d });
    expect(b.peek(10).map((r) => r.seq)).toEqual([1]);
    expect((await b.append(body(2))).seq).toBe(2);
    expect((await readFile(join(d, 'reports.log'), 'utf8')).split('\n').filter(Boolean)).toHaveLength(2);
    await b.close();
  });

  it('compacts acknowledged lines away and refuses appends past maxPending', async () => {
    const d = await dir();
    const s = await Spool.open({ dir: d, compactBytes: 200, maxPending: 3 });
    for (let i = 1; i <= 3; i++) await s.append(body(i));
    await expect(s.append(body(4))).rejects.toBeInstanceOf(SpoolFullError);
    await s.ack(2);
    const lines = (await readFile(join(d, 'reports.log'), 'utf8')).split('\n').filter(Boolean);
    expect(lines.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([3]);
    expect((await s.append(body(4))).seq).toBe(4);
    await s.close();
  });
});
