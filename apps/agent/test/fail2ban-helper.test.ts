import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { systemGate } from '@rampart/plugin-kit/testing';
import { afterAll, describe, expect, it } from 'vitest';

/*
 * The fail2ban helper (packaging/fail2ban/rampart-fail2ban) run as fail2ban runs it: what a ban
 * queues (source from the jail, confidence from the failure count), what it refuses to queue,
 * and a key file others can read. test/e2e/fail2ban-action.test.ts runs it under fail2ban.
 */

const HELPER = fileURLToPath(new URL('../packaging/fail2ban/rampart-fail2ban', import.meta.url));

describe.skipIf(systemGate('fail2ban helper', { commands: ['python3'] }))('rampart-fail2ban', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-f2b-helper-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Queues one ban (without starting a flusher) and returns what was queued, if anything. */
  function ban(spool: string, ...args: string[]): { body: Record<string, unknown> } | undefined {
    const before = new Set(readdirSafe(join(spool, 'queue')));
    execFileSync('python3', [HELPER, 'report', '--url', 'http://127.0.0.1:9/api/v1', '--spool', spool, '--no-flush', ...args]);
    const added = readdirSafe(join(spool, 'queue')).filter((n) => !before.has(n));
    return added.length === 1 ? (JSON.parse(readFileSync(join(spool, 'queue', added[0]!), 'utf8')) as { body: Record<string, unknown> }) : undefined;
  }
  const readdirSafe = (d: string) => {
    try {
      return readdirSync(d);
    } catch {
      return [];
    }
  };

  it('takes the source from the jail and the confidence from the failures over maxretry', () => {
    const spool = join(dir, 'a');
    const q = (jail: string, failures: number, extra: string[] = []) => ban(spool, '--ip', '45.33.12.7', '--jail', jail, '--failures', String(failures), '--maxretry', '5', ...extra)!.body;
    expect(q('sshd', 5)).toEqual({ ip: '45.33.12.7', confidence: 0.6, source: 'ssh_log', notes: 'fail2ban jail sshd: 5 failures' });
    expect([q('sshd', 10).confidence, q('sshd', 20).confidence, q('sshd', 1).confidence]).toEqual([0.84, 0.97, 0.17]);
    expect(['nginx-http-auth', 'apache-auth', 'recidive', 'postfix-sasl', 'vsftpd'].map((j) => q(j, 5).source)).toEqual(['waf_log', 'waf_log', 'recidive', 'mail_log', 'fail2ban']);
    expect(q('recidive', 5).confidence).toBe(0.9);
    expect(q('vsftpd', 5, ['--source', 'ftp_log']).source).toBe('ftp_log');
    const names = readdirSync(join(spool, 'queue'));
    expect(names).toHaveLength(11);
    // Named by the time of the ban (the flusher sends them in that order), each with its own id.
    expect(names.every((n) => /^\d{20}-[0-9a-f]{32}\.json$/.test(n))).toBe(true);
    expect(new Set(names.map((n) => n.slice(21, 53))).size).toBe(11);
  }, 120_000);

  it('queues nothing for what POST /ips cannot take, and says why', () => {
    const spool = join(dir, 'b');
    expect(ban(spool, '--ip', '2001:db8::1', '--jail', 'sshd')).toBeUndefined();
    expect(ban(spool, '--ip', 'not-an-ip', '--jail', 'sshd')).toBeUndefined();
    const log = readFileSync(join(spool, 'rampart-fail2ban.log'), 'utf8');
    expect(log).toContain('ban of 2001:db8::1 (jail sshd) not reported: POST /ips takes IPv4 only');
    expect(log).toContain("ban of 'not-an-ip' (jail sshd) not reported: not an IP address");
  });

  it('sends nothing with a key file others can read, and keeps the report', async () => {
    const spool = join(dir, 'c');
    const keyFile = join(dir, 'open.key');
    writeFileSync(keyFile, 'rmp_secret\n');
    chmodSync(keyFile, 0o644);
    ban(spool, '--ip', '45.33.12.8', '--jail', 'sshd');
    const flusher = spawn('python3', [HELPER, 'flush', '--url', 'http://127.0.0.1:9/api/v1', '--spool', spool, '--keyfile', keyFile, '--max-backoff', '1'], { stdio: 'ignore' });
    try {
      const deadline = Date.now() + 30_000;
      const log = () => readdirSafe(spool).includes('rampart-fail2ban.log') && readFileSync(join(spool, 'rampart-fail2ban.log'), 'utf8');
      while (!(log() || '').includes('readable by others') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(log()).toContain(`cannot send: key file ${keyFile} is readable by others (mode 644): chmod 600 it`);
      expect(log()).not.toContain('rmp_secret');
      expect(readdirSync(join(spool, 'queue'))).toHaveLength(1);
    } finally {
      flusher.kill('SIGKILL');
    }
  }, 60_000);
});
