import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exited, serverDir } from './support/server-process.ts';

/*
 * The embedded store's data-directory lock under contention, with real processes: several
 * processes told to take the same directory at the same moment, over no lock and over the lock
 * of a holder killed by SIGKILL. Exactly one may hold it, every time.
 */

const root = mkdtempSync(join(tmpdir(), 'rampart-lock-race-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Racer {
  child: ChildProcessWithoutNullStreams;
  lines: Interface;
  next(): Promise<Record<string, unknown>>;
  send(command: object): void;
}

function startRacer(): Promise<Racer> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/lock-racer.ts'], { cwd: serverDir, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderr.setEncoding('utf8').on('data', (d: string) => process.stderr.write(d));
  const lines = createInterface({ input: child.stdout });
  const queue: string[] = [];
  const waiting: Array<(line: string) => void> = [];
  lines.on('line', (line) => (waiting.length > 0 ? waiting.shift()!(line) : queue.push(line)));
  const racer: Racer = {
    child,
    lines,
    next: () => new Promise((resolve) => (queue.length > 0 ? resolve(JSON.parse(queue.shift()!) as Record<string, unknown>) : waiting.push((l) => resolve(JSON.parse(l) as Record<string, unknown>)))),
    send: (command) => child.stdin.write(`${JSON.stringify(command)}\n`),
  };
  return racer.next().then(() => racer);
}

/** A data directory whose lock is held by a process then killed with SIGKILL (a stale lock, as a crash leaves it). */
async function staleTemplate(): Promise<string> {
  const dir = join(root, 'stale-template');
  const holder = await startRacer();
  holder.send({ lock: dir });
  expect(await holder.next()).toEqual({ held: true });
  holder.child.kill('SIGKILL');
  await exited(holder.child);
  return dir;
}

const racers: Racer[] = [];
let stale = '';
beforeAll(async () => {
  stale = await staleTemplate();
  racers.push(...(await Promise.all([1, 2, 3, 4, 5].map(() => startRacer()))));
}, 120_000);
afterAll(async () => {
  for (const r of racers) {
    r.child.stdin.end();
    r.child.kill('SIGTERM');
    await exited(r.child);
  }
});

/** Runs `trials` races of `n` processes over a directory as `prepare` leaves it; the number of holders of each. */
async function race(n: number, trials: number, prepare: (dir: string) => void): Promise<{ holders: number[]; refusals: string[] }> {
  const holders: number[] = [];
  const refusals: string[] = [];
  for (let trial = 0; trial < trials; trial += 1) {
    const dir = join(root, `n${n}-${trial}-${Math.random().toString(36).slice(2)}`);
    prepare(dir);
    const contenders = racers.slice(0, n);
    for (const r of contenders) r.send({ lock: dir });
    const answers = await Promise.all(contenders.map((r) => r.next()));
    holders.push(answers.filter((a) => a.held === true).length);
    for (const a of answers) if (a.held !== true) refusals.push(String(a.error));
    for (const r of contenders) r.send({ release: true });
    await Promise.all(contenders.map((r) => r.next()));
    rmSync(dir, { recursive: true, force: true });
  }
  return { holders, refusals };
}

const TRIALS = 200;
/** The trials without exactly one holder, and whether every loser was refused because another process holds it. */
function verdict({ holders, refusals }: { holders: number[]; refusals: string[] }) {
  return {
    notOne: holders.map((h, trial) => ({ trial, holders: h })).filter((t) => t.holders !== 1),
    otherRefusals: refusals.filter((r) => !/ is in use by the Rampart server \(pid \d+\)$/.test(r)),
  };
}

describe('data-directory lock races', { timeout: 600_000 }, () => {
  for (const n of [2, 5]) {
    it(`${n} processes over no lock: exactly one holder in each of ${TRIALS} trials`, async () => {
      expect(verdict(await race(n, TRIALS, () => {}))).toEqual({ notOne: [], otherRefusals: [] });
    });
    it(`${n} processes over the lock of a killed holder: exactly one holder in each of ${TRIALS} trials`, async () => {
      expect(verdict(await race(n, TRIALS, (dir) => cpSync(stale, dir, { recursive: true })))).toEqual({ notOne: [], otherRefusals: [] });
    });
  }

  it('a process killed while taking its locks leaves locks the next start takes over, whatever it was doing', async () => {
    const base = join(root, 'killed-while-writing');
    const victim = await startRacer();
    victim.send({ lockMany: base, n: 1_000_000 });
    expect(await victim.next()).toEqual({ started: true });
    // Let it take some, then kill it wherever it is: creating a directory, writing, linking, clearing.
    while (!existsSync(base) || readdirSync(base).length < 100) await new Promise((r) => setTimeout(r, 5));
    victim.child.kill('SIGKILL');
    await exited(victim.child);
    const dirs = readdirSync(base);
    expect(dirs.length).toBeGreaterThan(10);
    const [taker] = racers;
    const refused: string[] = [];
    for (const d of dirs) {
      taker!.send({ lock: join(base, d) });
      const answer = await taker!.next();
      if (answer.held !== true) refused.push(`${d}: ${String(answer.error)}`);
    }
    taker!.send({ release: true });
    await taker!.next();
    expect(refused).toEqual([]);
    // Nothing of the killed process is left once the directories were taken.
    const leftovers = dirs.flatMap((d) => readdirSync(join(base, d)).filter((f) => f.includes('tmp')));
    expect(leftovers).toEqual([]);
  });

  it('leaves no lock behind once released, so the next start takes it at once', async () => {
    const dir = join(root, 'released');
    const [a, b] = racers;
    a!.send({ lock: dir });
    expect(await a!.next()).toEqual({ held: true });
    a!.send({ release: true });
    expect(await a!.next()).toEqual({ released: 1 });
    b!.send({ lock: dir });
    expect(await b!.next()).toEqual({ held: true });
    b!.send({ release: true });
    await b!.next();
    expect(readdirSync(dir).filter((f) => f.includes('tmp'))).toEqual([]);
  });
});
