import { waitFor } from './testing/until.ts';
import { appendFile, mkdtemp, rename, rm, truncate, writeFile, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileOffsetStore } from './offset-store.ts';
import { tailFile } from './tail.ts';
import type { TailOptions } from './tail.ts';


describe('tailFile on real files', () => {
  let dir: string;
  let log: string;
  const running: { stop: AbortController; done: Promise<void> }[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rampart-tail-'));
    log = join(dir, 'auth.log');
  });
  afterEach(async () => {
    // Stop every tail and let it write its last position before the directory goes.
    for (const r of running.splice(0)) {
      r.stop.abort();
      await r.done.catch(() => undefined);
    }
    await rm(dir, { recursive: true, force: true });
  });

  function start(extra: Partial<TailOptions> = {}) {
    const lines: string[] = [];
    const stop = new AbortController();
    const tail = tailFile({ path: log, onLines: (l) => lines.push(...l), signal: stop.signal, pollIntervalMs: 50, ...extra });
    running.push({ stop, done: tail.done });
    return { lines, stop, tail };
  }

  it('reads complete lines only, joining a line written in two parts', async () => {
    await writeFile(log, 'one\r\ntw');
    const { lines, tail } = start({ startAt: 'beginning' });
    await tail.ready;
    await waitFor(() => lines.length === 1, 'first line');
    await appendFile(log, 'o\nthree\n');
    await waitFor(() => lines.length === 3, 'three lines');
    expect(lines).toEqual(['one', 'two', 'three']);
  });

  it('skips the history of a file never seen before (startAt end)', async () => {
    await writeFile(log, 'old 1\nold 2\n');
    const { lines, tail } = start();
    await tail.ready;
    await appendFile(log, 'new\n');
    await waitFor(() => lines.length === 1, 'new line');
    expect(lines).toEqual(['new']);
  });

  it('survives rotation by rename: drains the old file, then reads the new one from its start', async () => {
    await writeFile(log, 'a\nb\n');
    const { lines, tail } = start({ startAt: 'beginning' });
    await tail.ready;
    await waitFor(() => lines.length === 2, 'a, b');
    await rename(log, `${log}.1`);
    await appendFile(`${log}.1`, 'c\n'); // the writer had not reopened yet
    await writeFile(log, 'd\ne\n');
    await waitFor(() => lines.length === 5, 'c, d, e');
    await appendFile(log, 'f\n');
    await waitFor(() => lines.length === 6, 'f');
    expect(lines).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('survives copy-truncate without reading a line twice', async () => {
    await writeFile(log, 'line 1\nline 2\n');
    const { lines, tail } = start({ startAt: 'beginning' });
    await tail.ready;
    await waitFor(() => lines.length === 2, 'two lines');
    await copyFile(log, `${log}.1`);
    await truncate(log, 0);
    await appendFile(log, 'after 1\n');
    await waitFor(() => lines.length === 3, 'line after truncation');
    // Truncated and regrown past the old position before the tailer looked: the head tells.
    await truncate(log, 0);
    await appendFile(log, 'X'.repeat(40) + ' after 2\n');
    await waitFor(() => lines.length === 4, 'line after second truncation');
    expect(lines).toEqual(['line 1', 'line 2', 'after 1', 'X'.repeat(40) + ' after 2']);
  });

  it('loses no line when copy-truncates land right after the read that reached the end', async () => {
    // Every round's file has the same length, so only the head tells the new file from the
    // old one; each copy-truncate lands between the read that found the end and the next read.
    const ROUNDS = 60;
    const name = (round: number) => `round ${String(round).padStart(3, '0')}`;
    const content = (round: number) => `${name(round)} first\n${name(round)} second\n`;
    await writeFile(log, content(0));
    let round = 0;
    let endsAfterLastRound = 0;
    const { lines, tail } = start({
      startAt: 'beginning',
      pollIntervalMs: 5,
      afterRead: async (_position, bytesRead) => {
        if (bytesRead !== 0) return;
        if (round === ROUNDS - 1) return void (endsAfterLastRound += 1);
        round += 1;
        await copyFile(log, `${log}.1`);
        await truncate(log, 0);
        await appendFile(log, content(round));
      },
    });
    await tail.ready;
    await waitFor(() => endsAfterLastRound > 0, 'the end of the last round', 30_000);
    expect(lines).toEqual(Array.from({ length: ROUNDS }, (_, r) => [`${name(r)} first`, `${name(r)} second`]).flat());
  });

  it('resumes from the persisted offset after a restart, without re-reading old lines', async () => {
    const offsets = fileOffsetStore(join(dir, 'state', 'offsets.json'));
    await writeFile(log, 'before start\n');
    const first = start({ offsets, startAt: 'beginning' });
    await first.tail.ready;
    await appendFile(log, 'r1\nr2\n');
    await waitFor(() => first.lines.length === 3, 'three lines');
    first.stop.abort();
    await first.tail.done;
    await appendFile(log, 'while down\npart');
    const second = start({ offsets: fileOffsetStore(join(dir, 'state', 'offsets.json')) });
    await second.tail.ready;
    await waitFor(() => second.lines.length === 1, 'line written while down');
    await appendFile(log, 'ial\n');
    await waitFor(() => second.lines.length === 2, 'the completed partial line');
    expect(first.lines).toEqual(['before start', 'r1', 'r2']);
    expect(second.lines).toEqual(['while down', 'partial']);
  });

  it('after a restart finishes the file rotated while stopped, then reads the new one from its start', async () => {
    const offsets = fileOffsetStore(join(dir, 'offsets.json'));
    await writeFile(log, 'x1\n');
    const first = start({ offsets, startAt: 'beginning' });
    await waitFor(() => first.lines.length === 1, 'x1');
    first.stop.abort();
    await first.tail.done;
    await appendFile(log, 'x2\nx3');
    await rename(log, `${log}.1`);
    await writeFile(`${log}.2.gz`, 'not read');
    await writeFile(log, 'y1\ny2\n');
    const second = start({ offsets });
    await waitFor(() => second.lines.length === 4, 'rest of the old file and the new file');
    expect(second.lines).toEqual(['x2', 'x3', 'y1', 'y2']);
  });

  it('waits for a file that does not exist yet', async () => {
    const { lines, tail } = start();
    await tail.ready;
    await writeFile(log, 'born\n');
    await waitFor(() => lines.length === 1, 'line of the new file');
    expect(lines).toEqual(['born']);
  });
});
