import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import { systemGate } from '@rampart/plugin-kit/testing';
import { seedOrg } from '@rampart/server/testing';
import { startControlPlane, tempDir, waitFor, type ControlPlane } from './support.ts';

/*
 * The shipped fail2ban action (apps/agent/packaging/fail2ban) with fail2ban 1.0.2's own server
 * in the foreground, on a private configuration directory: one sshd jail (Debian's sshd filter,
 * polling backend) on a generated auth.log (../shared/bench/gen-authlog.py, times of the last
 * hour), the action pointed at a real control plane. The first half of the log is written with
 * the control plane up; then the control plane stops answering, the second half is written (the
 * bans queue on disk, fail2ban keeps answering and banning), and the control plane comes back.
 * Every ban fail2ban logs must arrive as exactly one report of the organization.
 */

const PACKAGING = fileURLToPath(new URL('../../apps/agent/packaging/fail2ban/', import.meta.url));
const GENERATOR = fileURLToPath(new URL('../../../shared/bench/gen-authlog.py', import.meta.url));
const FILTERS = '/etc/fail2ban/filter.d';
const LINES = 3000;

describe.skipIf(systemGate('fail2ban action against a control plane', { commands: ['fail2ban-server', 'fail2ban-client', 'python3'] }))('fail2ban reports its bans', () => {
  let cp: ControlPlane;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: ChildProcess | undefined;
  let reader: RampartClient;
  let key: string;

  beforeAll(async () => {
    cp = await startControlPlane();
    dir = await tempDir('rampart-f2b-');
    const org = await seedOrg(cp.store, { credits: 10_000_000, trust: 1 });
    key = org.keys.contributor;
    reader = new RampartClient({ baseUrl: cp.url, apiKey: org.keys.reader });
  }, 180_000);
  afterAll(async () => {
    if (server?.pid !== undefined && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((r) => server!.once('exit', r));
    }
    await cp?.close();
    // A flusher still retrying ends when its spool is gone.
    if (!process.env.KEEP_E2E) await dir?.remove();
  });

  /** Reports per address in the organization's feed (`info.events`). */
  async function reports(): Promise<Map<string, number>> {
    const events = new Map<string, number>();
    for await (const page of reader.ipsFeed(0, { page_size: 1000, full: 'yes' })) for (const r of page.body) events.set(r.ip, r.info!.events);
    return events;
  }

  it('delivers each ban once, queues them while the control plane is away, and never blocks fail2ban', async () => {
    const root = dir.path;
    const conf = join(root, 'conf');
    const spool = join(root, 'spool');
    const authLog = join(root, 'auth.log');
    const f2bLog = join(root, 'fail2ban.log');
    const socket = join(root, 'f2b.sock');
    const keyFile = join(root, 'rampart.key');
    mkdirSync(join(conf, 'filter.d'), { recursive: true });
    mkdirSync(join(conf, 'action.d'));
    for (const f of ['sshd.conf', 'common.conf']) copyFileSync(join(FILTERS, f), join(conf, 'filter.d', f));
    copyFileSync(join(PACKAGING, 'action.d', 'rampart.conf'), join(conf, 'action.d', 'rampart.conf'));
    writeFileSync(keyFile, `${key}\n`);
    chmodSync(keyFile, 0o600);
    writeFileSync(
      join(conf, 'fail2ban.conf'),
      `[Definition]\nloglevel = INFO\nlogtarget = ${f2bLog}\nsyslogsocket = auto\nsocket = ${socket}\npidfile = ${join(root, 'f2b.pid')}\ndbfile = ${join(root, 'f2b.sqlite3')}\ndbpurgeage = 1d\n`,
    );
    writeFileSync(
      join(conf, 'jail.conf'),
      [
        '[DEFAULT]',
        'backend = polling',
        '[sshd]',
        'enabled = true',
        'filter = sshd',
        `logpath = ${authLog}`,
        'maxretry = 5',
        'findtime = 1d',
        'bantime = 1d',
        'logtimezone = UTC',
        `action = rampart[url="${cp.url}", keyfile="${keyFile}", spool="${spool}", rampart="${join(PACKAGING, 'rampart-fail2ban')}", maxretry=%(maxretry)s, max_backoff=2]`,
        '',
      ].join('\n'),
    );

    // The generated log ends a few minutes ago: fail2ban counts only lines within findtime.
    const probe = JSON.parse(execFileSync('python3', [GENERATOR, '-n', String(LINES), '--seed', '11', '-o', join(root, 'probe.log')]).toString()) as { simulated_seconds: number };
    const start = new Date(Date.now() - (probe.simulated_seconds + 600) * 1000).toISOString().slice(0, 19);
    execFileSync('python3', [GENERATOR, '-n', String(LINES), '--seed', '11', '--start', start, '-o', join(root, 'gen.log')], { stdio: 'ignore' });
    const lines = readFileSync(join(root, 'gen.log'), 'utf8').split('\n').filter((l) => l !== '');
    const half = Math.floor(lines.length / 2);
    writeFileSync(authLog, '');

    server = spawn('fail2ban-server', ['-f', '-x', '-s', socket, '-p', join(root, 'f2b.pid'), '-c', conf], { env: { ...process.env, TZ: 'UTC' }, stdio: 'ignore' });
    const client = (...args: string[]) => execFileSync('fail2ban-client', ['-s', socket, ...args], { env: { ...process.env, TZ: 'UTC' } }).toString();
    await waitFor('the sshd jail', () => existsSync(f2bLog) && readFileSync(f2bLog, 'utf8').includes("Jail 'sshd' started"), 60_000, 100);

    const log = () => readFileSync(f2bLog, 'utf8');
    const bans = () => [...log().matchAll(/\] Ban (\S+)/g)].map((m) => m[1]!);
    /**
     * Appends lines, then five failures of a marker address (TEST-NET: the server refuses it, so
     * its report is set aside as rejected); resolves once fail2ban banned the marker, which it
     * does after every ban the lines before it caused (one queue, in order).
     */
    const feed = async (part: string[], marker: string) => {
      const now = new Date();
      const stamp = `${now.toUTCString().slice(8, 11)} ${String(now.getUTCDate()).padStart(2, ' ')} ${now.toISOString().slice(11, 19)}`;
      const failures = [1, 2, 3, 4, 5].map((i) => `${stamp} bastion-01 sshd[9999${i}]: Failed password for root from ${marker} port ${i} ssh2`);
      appendFileSync(authLog, `${[...part, ...failures].join('\n')}\n`);
      await waitFor(`fail2ban to ban ${marker}`, () => bans().includes(marker), 120_000, 200);
    };
    const queued = () => readdirSync(join(spool, 'queue')).filter((n) => n.endsWith('.json')).length;

    // 1. Control plane up.
    await feed(lines.slice(0, half), '198.51.100.1');
    const bansUp = bans().length;
    expect(bansUp).toBeGreaterThan(1);
    const rejected = () => readdirSync(join(spool, 'rejected')).length;
    // Every ban but the marker's is stored; the marker's is set aside.
    await waitFor('the first bans reported', async () => rejected() === 1 && [...(await reports()).values()].reduce((a, b) => a + b, 0) === bansUp - 1, 60_000, 250);

    // 2. Control plane away: bans go on, each ban action returns at once, the reports queue.
    await cp.stop();
    const downAt = Date.now();
    await feed(lines.slice(half), '198.51.100.2');
    await waitFor('bans while away', () => bans().length > bansUp, 60_000, 200);
    const bansDown = bans().length - bansUp;
    await waitFor('the bans queued', () => queued() === bansDown, 30_000, 100);
    expect(client('ping')).toContain('pong');
    expect(client('status', 'sshd')).toContain(`Total banned:\t${bansUp + bansDown}`);
    // The flusher keeps retrying with back-off meanwhile (its log says so).
    await waitFor('a retry while away', () => (readFileSync(join(spool, 'rampart-fail2ban.log'), 'utf8').match(/not sent/g) ?? []).length >= 2, 30_000, 200);
    const awayMs = Date.now() - downAt;

    // 3. Back: everything queued arrives, once.
    await cp.start();
    const backAt = Date.now();
    const delivered = await waitFor('every ban reported', async () => {
      const r = await reports();
      return queued() === 0 && [...r.values()].reduce((a, b) => a + b, 0) + rejected() >= bansUp + bansDown && r;
    }, 60_000, 250);
    const drainMs = Date.now() - backAt;

    const banned = bans();
    const total = [...delivered.values()].reduce((a, b) => a + b, 0);
    console.log(
      `fail2ban: ${banned.length} bans (${bansUp} with the control plane up, ${bansDown} while it was away ${Math.round(awayMs / 1000)} s), ` +
        `${total} reports on the server for ${delivered.size} addresses, ${queued()} queued, ${rejected()} rejected (the TEST-NET markers); ` +
        `queue drained ${(drainMs / 1000).toFixed(1)} s after the control plane came back`,
    );
    expect(bansDown).toBeGreaterThan(0);
    const markers = ['198.51.100.1', '198.51.100.2'];
    expect(total).toBe(banned.length - markers.length);
    expect([...delivered.keys()].sort()).toEqual([...new Set(banned)].filter((ip) => !markers.includes(ip)).sort());
    expect([...delivered.values()].every((n) => n === 1)).toBe(true);
    expect(readdirSync(join(spool, 'rejected')).map((n) => (JSON.parse(readFileSync(join(spool, 'rejected', n), 'utf8')) as { body: { ip: string } }).body.ip).sort()).toEqual(markers);
    expect(readFileSync(join(spool, 'rampart-fail2ban.log'), 'utf8')).toContain('198.51.100.1 lies in 198.51.100.0/24');
    // The ban actions all succeeded, fast, and fail2ban still answers.
    expect(log()).not.toMatch(/ERROR|timed out/);
    expect(client('ping')).toContain('pong');
    expect(server.exitCode).toBeNull();

    // What a report says: source from the jail, confidence from the failure count.
    const page = await reader.ipLookup(banned[0]!, { full: 'yes' });
    expect(page.body[0]!.info!.notes.some((n) => /^fail2ban jail sshd: \d+ failures \[rampart-report [0-9a-f]{32}\]$/.test(n))).toBe(true);
  }, 600_000);
});
