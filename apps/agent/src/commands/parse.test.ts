import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCommand } from './parse.ts';

function capture() {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: string[] = [];
  const err: string[] = [];
  stdout.on('data', (c: Buffer) => out.push(c.toString()));
  stderr.on('data', (c: Buffer) => err.push(c.toString()));
  return { stdout, stderr, out: () => out.join(''), err: () => err.join('') };
}

const LOG = [
  'Mar  1 10:00:00 h sshd[1]: Invalid user oracle from 198.51.100.9 port 4242',
  'Mar  1 10:00:01 h sshd[2]: Connection closed by 203.0.113.5 port 22 [preauth]',
  'Mar  1 10:00:02 h CRON[3]: pam_unix(cron:session): session opened for user root',
  'Mar  1 10:00:03 h sshd[4]: Failed password for root from 192.0.2.7 port 5 ssh2',
].join('\n');

describe('rampart-agent parse', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rampart-parse-'));
    await writeFile(join(dir, 'auth.log'), LOG); // no final newline: the last line still counts
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('prints one JSON line per detection and a summary on stderr', async () => {
    process.env.TZ = 'UTC';
    const io = capture();
    expect(await parseCommand({ source: 'ssh_log', file: join(dir, 'auth.log') }, { stdin: Readable.from([]), ...io })).toBe(0);
    const lines = io.out().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => Object.keys(l))).toEqual([['ts', 'ip', 'source', 'kind', 'attempts'], ['ts', 'ip', 'source', 'kind', 'attempts']]);
    expect(lines.map(({ ip, kind, attempts, source }) => ({ ip, kind, attempts, source }))).toEqual([
      { ip: '198.51.100.9', kind: 'invalid_user', attempts: 1, source: 'ssh_log' },
      { ip: '192.0.2.7', kind: 'auth_failure', attempts: 1, source: 'ssh_log' },
    ]);
    expect(new Date((lines[0]!.ts as number) * 1000).toISOString().slice(5, 19)).toBe('03-01T10:00:00');
    expect(io.err()).toMatch(/^parse: ssh_log \(normal\) read 4 lines in .* 2 detections, 2 attempts, 2 addresses \(invalid_user 1, auth_failure 1\)/);
  });

  it('reads stdin in aggressive mode', async () => {
    const io = capture();
    const stdin = Readable.from([Buffer.from(LOG.slice(0, 100)), Buffer.from(LOG.slice(100) + '\n')]);
    expect(await parseCommand({ source: 'ssh_log', mode: 'aggressive', file: '-' }, { stdin, ...io })).toBe(0);
    expect(io.out().trim().split('\n').map((l) => (JSON.parse(l) as { ip: string }).ip)).toEqual(['198.51.100.9', '203.0.113.5', '192.0.2.7']);
  });

  it('prints the reports the policy completes with --reports', async () => {
    process.env.TZ = 'UTC';
    const failures = (ip: string, second0: number) =>
      [0, 1, 2].map((i) => `Mar  1 10:01:${String(second0 + i).padStart(2, '0')} h sshd[${second0 + i}]: Failed password for root from ${ip} port 5 ssh2`);
    const log = [...failures('45.33.12.7', 10), ...failures('10.0.0.1', 20), ...failures('81.2.69.9', 30)].join('\n');
    const io = capture();
    const config = JSON.stringify({ active: true, ssh_log_location: '-', options: { max_retry: 3 } });
    expect(await parseCommand({ source: 'ssh_log', file: '-', config, reports: true }, { stdin: Readable.from([log]), ...io })).toBe(0);
    const lines = io.out().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => Object.keys(l))).toEqual([['ip', 'ts', 'confidence', 'notes'], ['ip', 'ts', 'confidence', 'notes']]);
    // 10.0.0.1 is a private address (as are the documentation ranges): the agent never reports it.
    expect(lines.map((l) => [l.ip, new Date((l.ts as number) * 1000).toISOString().slice(11, 19), l.notes])).toEqual([
      ['45.33.12.7', '10:01:12', '3 ssh_log attempts in 2s: auth_failure x3'],
      ['81.2.69.9', '10:01:32', '3 ssh_log attempts in 2s: auth_failure x3'],
    ]);
    expect(io.err()).toMatch(/\nparse: 2 reports, 2 addresses \(detections not reportable: special_range 3\)\n$/);
  });

  it('counts a key probe for the policy in normal mode but prints only fail2ban\'s detection lines', async () => {
    process.env.TZ = 'UTC';
    // Three failed passwords and two key probes ("Connection closed by authenticating user" alone
    // on its connection): five attempts, one report; the probes are no detection lines.
    const log = [
      ...[0, 1, 2].map((i) => `Mar  1 10:02:0${i} h sshd[${50 + i}]: Failed password for root from 45.33.12.7 port ${4000 + i} ssh2`),
      ...[3, 4].map((i) => `Mar  1 10:02:0${i} h sshd[${50 + i}]: Connection closed by authenticating user root 45.33.12.7 port ${4000 + i} [preauth]`),
    ].join('\n');
    let io = capture();
    expect(await parseCommand({ source: 'ssh_log', file: '-' }, { stdin: Readable.from([log]), ...io })).toBe(0);
    expect(io.out().trim().split('\n').map((l) => (JSON.parse(l) as { kind: string }).kind)).toEqual(['auth_failure', 'auth_failure', 'auth_failure']);
    expect(io.err()).toMatch(/: 3 detections, 3 attempts, 1 addresses \(auth_failure 3\) \[.*keyProbes 2\]\n$/);
    io = capture();
    expect(await parseCommand({ source: 'ssh_log', file: '-', reports: true }, { stdin: Readable.from([log]), ...io })).toBe(0);
    expect(io.out().trim().split('\n').map((l) => (JSON.parse(l) as { notes: string }).notes)).toEqual(['5 ssh_log attempts in 4s: auth_failure x3, auth_abandoned x2']);
  });

  it('fails clearly on an unknown source, a bad mode, bad config and a missing file', async () => {
    const stdin = Readable.from([]);
    let io = capture();
    expect(await parseCommand({ source: 'nope', file: '-' }, { stdin, ...io })).toBe(2);
    expect(io.err()).toMatch(/^parse: no source for 'nope'; known sources: .*ssh_log/);
    io = capture();
    expect(await parseCommand({ source: 'ssh_log', mode: 'loud' as never, file: '-' }, { stdin, ...io })).toBe(2);
    expect(io.err()).toBe("parse: --mode must be normal or aggressive, not 'loud'\n");
    io = capture();
    expect(await parseCommand({ source: 'ssh_log', file: '-', config: '{"active":true,"ssh_log_location":""}' }, { stdin, ...io })).toBe(2);
    expect(io.err()).toBe('parse: ids.ssh_log.ssh_log_location: a log file path is required\n');
    io = capture();
    expect(await parseCommand({ source: 'ssh_log', file: join(dir, 'missing.log') }, { stdin, ...io })).toBe(1);
    expect(io.err()).toMatch(/^parse: cannot read .*missing\.log: ENOENT/);
  });

  it('reads a file in chunks as it reads the same bytes from stdin: lines across chunks, CRLF, no final newline', async () => {
    process.env.TZ = 'UTC';
    // ~1 MB: lines of varying length cross the 256 KiB reads at varying offsets.
    const lines: string[] = [];
    for (let i = 0; i < 9000; i++) {
      const ip = `45.33.${(i >> 8) & 255}.${i & 255}`;
      const pad = 'x'.repeat(i % 37);
      lines.push(`Mar  1 10:${String((i >> 6) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')} h sshd[${i}]: Failed password for u${pad} from ${ip} port ${i} ssh2${i % 5 === 0 ? '\r' : ''}`);
      if (i % 7 === 0) lines.push(`Mar  1 10:00:00 h sshd[${i}]: Invalid user ü${pad} from ${ip} port ${i}`);
    }
    const text = lines.join('\n');
    const file = join(dir, 'big.log');
    await writeFile(file, text);
    const fromFile = capture();
    expect(await parseCommand({ source: 'ssh_log', file, mode: 'aggressive' }, { stdin: Readable.from([]), ...fromFile })).toBe(0);
    const bytes = Buffer.from(text);
    const fromStdin = capture();
    const pieces = [bytes.subarray(0, 70_001), bytes.subarray(70_001, 70_002), bytes.subarray(70_002)];
    expect(await parseCommand({ source: 'ssh_log', file: '-', mode: 'aggressive' }, { stdin: Readable.from(pieces), ...fromStdin })).toBe(0);
    const printed = fromFile.out().trim().split('\n');
    expect(printed.length).toBe(lines.length);
    expect(fromFile.out()).toBe(fromStdin.out());
    expect(fromFile.err()).toMatch(new RegExp(`read ${lines.length} lines`));
  });
});
