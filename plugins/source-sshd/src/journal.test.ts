import { until } from '@rampart/plugin-kit/testing';
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { journalCursorPath, parseLines } from '@rampart/plugin-kit';
import type { Detection } from '@rampart/plugin-kit';
import { JOURNAL_REMOTE, syslogToJournal, systemGate, writeJournal } from '@rampart/plugin-kit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SshParser, SshSourceConfig } from './index.ts';

/*
 * ssh_log read from a real journal: a generated auth.log (../shared/bench/gen-authlog.py) turned
 * into journal entries (sshd's in ssh.service, the rest in their own units) and written by
 * systemd-journal-remote into a journal file, which journalctl follows with --directory. The
 * source runs in a process of its own (as under the agent's supervisor); it is killed with
 * SIGKILL, together with its journalctl, after the first half, the second half is appended to
 * the journal, and it is started again. Its detections must equal those of the same lines read
 * as a file, with the parser's memory starting over at the same line (a restarted file source
 * forgets its connections too): none lost, none doubled.
 */

const GENERATOR = fileURLToPath(new URL('../../../../shared/bench/gen-authlog.py', import.meta.url));
const RUNNER = fileURLToPath(new URL('../../../packages/plugin-kit/src/testing/source-runner.ts', import.meta.url));
const INDEX = fileURLToPath(new URL('./index.ts', import.meta.url));
const READ_AT = Date.parse('2025-03-08T00:00:00Z') / 1000;
const LINES = 12_000;

const key = (d: Detection) => `${d.ts} ${d.ip} ${d.kind} ${d.attempts}${d.policyOnly ? ' policy-only' : ''}`;

describe.skipIf(systemGate('ssh_log from a real journal', { commands: ['journalctl', JOURNAL_REMOTE, 'python3'] }))('ssh_log from the systemd journal', () => {
  let dir: string;
  let lines: string[];
  let runner: ChildProcess | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rampart-journal-'));
    execFileSync('python3', [GENERATOR, '-n', String(LINES), '--seed', '42', '-o', join(dir, 'auth.log')], { stdio: 'ignore' });
    lines = readFileSync(join(dir, 'auth.log'), 'utf8').split('\n').filter((l) => l !== '');
  });
  afterAll(() => {
    if (runner?.pid !== undefined && runner.exitCode === null) process.kill(-runner.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts the source in its own process group (so that its journalctl dies with it). */
  function start(config: unknown, stateDir: string, out: string): ChildProcess {
    const args = { module: INDEX, exportName: 'sshdSource', config, mode: 'normal', stateDir, out };
    const child = spawn(process.execPath, ['--import', 'tsx', RUNNER, JSON.stringify(args)], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    child.stderr!.on('data', () => undefined);
    return child;
  }


  /** The cursor of the last entry of the unit, as journalctl reports it. */
  const lastCursor = (journalDir: string) =>
    (JSON.parse(execFileSync('journalctl', [`--directory=${journalDir}`, '--unit=ssh.service', '--lines=1', '--output=json', '--no-pager']).toString()) as { __CURSOR: string }).__CURSOR;
  const readCursor = (path: string) => {
    try {
      return readFileSync(path, 'utf8').trim();
    } catch {
      return '';
    }
  };
  const emitted = (out: string) =>
    readFileSync(out, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Detection);

  it('detects what the file source detects, across a SIGKILL and restart, none lost or doubled', async () => {
    const journalDir = join(dir, 'journal');
    const stateDir = join(dir, 'state');
    const out = join(dir, 'detections.jsonl');
    execFileSync('mkdir', ['-p', journalDir]);
    writeFileSync(out, '');
    const half = Math.floor(lines.length / 2);
    const unit = (program: string) => ({ _SYSTEMD_UNIT: program === 'sshd' ? 'ssh.service' : `${program.toLowerCase()}.service` });
    const entries = syslogToJournal(lines, READ_AT, unit);
    expect(entries).toHaveLength(lines.length);

    const config = SshSourceConfig.parse({ active: true, ssh_log_location: 'journal:ssh.service', options: { journal_directory: journalDir, start_at: 'beginning' } });
    const cursorFile = journalCursorPath(stateDir, 'journal:ssh.service', config.options);
    const journalFile = join(journalDir, 'remote.journal');

    // The same lines as a file, the parser starting over where the source is restarted.
    const fileRun = [
      ...parseLines(new SshParser({ mode: 'normal' }), lines.slice(0, half), READ_AT),
      ...parseLines(new SshParser({ mode: 'normal' }), lines.slice(half), READ_AT),
    ].map(key);
    const wholeFile = parseLines(new SshParser({ mode: 'normal' }), lines, READ_AT).map(key);

    await writeJournal(journalFile, entries.slice(0, half));
    runner = start(config, stateDir, out);
    const firstCursor = lastCursor(journalDir);
    await until('the first half read', () => readCursor(cursorFile) === firstCursor, 60_000);
    const beforeKill = emitted(out).length;
    process.kill(-runner.pid!, 'SIGKILL');
    await new Promise((r) => runner!.once('exit', r));

    await writeJournal(journalFile, entries.slice(half));
    const secondCursor = lastCursor(journalDir);
    expect(secondCursor).not.toBe(firstCursor);
    runner = start(config, stateDir, out);
    await until('the second half read', () => readCursor(cursorFile) === secondCursor, 60_000);
    runner.kill('SIGTERM');
    await new Promise((r) => runner!.once('exit', r));

    const journalRun = emitted(out).map(key);
    const differing = wholeFile.filter((k, i) => journalRun[i] !== k).length;
    console.log(
      `journal ssh_log: ${entries.length} entries (${lines.length} lines), ${journalRun.length} detections (${beforeKill} before the SIGKILL), ` +
        `file source with the same restart ${fileRun.length}, file read without restart ${wholeFile.length} (${differing} differ by the restart's lost connection state)`,
    );
    expect(beforeKill).toBeGreaterThan(0);
    expect(journalRun.length).toBeGreaterThan(beforeKill);
    expect(journalRun).toEqual(fileRun);
  }, 180_000);
});
