import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { lockDataDir } from '../../src/store/data-dir-lock.ts';

/*
 * A process that takes data-directory locks on command, for the lock race test
 * (embedded-store-lock.test.ts). Each line on stdin is a command; each answer is one line:
 *   {"lock": dir}  → {"held": true} or {"held": false, "error": message}
 *   {"release": true} → {"released": n} (every lock this process holds)
 *   {"lockMany": dir, "n": n} → {"started": true}, then takes dir/0 … dir/n-1 one after another
 *     without answering (the test kills the process somewhere in the middle of that)
 * Many of these race by being told to lock the same directory at the same moment.
 */
const releases: Array<() => void> = [];
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const command = JSON.parse(line) as { lock?: string; release?: true; lockMany?: string; n?: number };
  if (command.lockMany !== undefined) {
    process.stdout.write(`${JSON.stringify({ started: true })}\n`);
    for (let i = 0; i < command.n!; i += 1) releases.push(lockDataDir(join(command.lockMany, String(i)), 'server'));
  } else if (command.lock !== undefined) {
    try {
      releases.push(lockDataDir(command.lock, 'server'));
      process.stdout.write(`${JSON.stringify({ held: true })}\n`);
    } catch (err) {
      process.stdout.write(`${JSON.stringify({ held: false, error: (err as Error).message })}\n`);
    }
  } else if (command.release) {
    const n = releases.length;
    for (const release of releases.splice(0)) release();
    process.stdout.write(`${JSON.stringify({ released: n })}\n`);
  }
});
process.stdout.write(`${JSON.stringify({ ready: process.pid })}\n`);
