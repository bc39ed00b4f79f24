import { readFile } from 'node:fs/promises';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { memoryOffsetStore } from '@rampart/plugin-kit';
import type { Detection } from '@rampart/plugin-kit';
import { describe, expect, it } from 'vitest';
import { SshParser, SshSourceConfig, sshdSource } from './index.ts';
import { silentLogger as silent } from '@rampart/plugin-kit/testing';


describe('sshd source definition', () => {
  it('parses the README sample config, whose options are the defaults', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = SshSourceConfig.parse(JSON.parse(sample!));
    expect(parsed).toEqual(SshSourceConfig.parse({ active: true, ssh_log_location: '/var/log/auth.log' }));
    expect(parsed.options.programs).toEqual(['sshd', 'sshd-session']);
  });

  it('names the failing fields', () => {
    const r = SshSourceConfig.safeParse({ active: true, ssh_log_location: '', options: { mode: 'paranoid', max_retry: 0, extra: 1 } });
    expect(r.success).toBe(false);
    const paths = r.error!.issues.map((i) => i.path.join('.')).sort();
    expect(paths).toEqual(['options', 'options.max_retry', 'options.mode', 'ssh_log_location']);
  });

  it('takes a journal location and refuses one that names no unit or identifier', () => {
    expect(SshSourceConfig.parse({ active: true, ssh_log_location: 'journal:ssh.service' }).ssh_log_location).toBe('journal:ssh.service');
    const r = SshSourceConfig.safeParse({ active: true, ssh_log_location: 'journal:ssh service', options: { journal_directory: '' } });
    expect(r.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['ssh_log_location', 'journal: must be followed by a unit or syslog identifier (letters, digits, _@.:-\\)'],
      ['options.journal_directory', 'Too small: expected string to have >=1 characters'],
    ]);
  });

  it('reads sshd-session, journald JSON and RFC 5424 lines', () => {
    const p = new SshParser({ mode: 'normal' });
    const readAt = Date.parse('2025-03-02T00:00:00Z') / 1000;
    const lines = [
      'Mar  1 10:00:00 h sshd-session[77]: Invalid user oracle from 198.51.100.9 port 4242',
      JSON.stringify({ __REALTIME_TIMESTAMP: '1740823200000000', SYSLOG_IDENTIFIER: 'sshd-session', _PID: '78', MESSAGE: 'Failed password for root from 2001:DB8::5 port 22 ssh2' }),
      '<38>1 2025-03-01T10:00:02Z h sshd 79 - - Failed password for invalid user x from 203.0.113.4 port 1 ssh2',
      'Mar  1 10:00:03 h cron[80]: Invalid user oracle from 198.51.100.10 port 4242',
    ];
    const out = lines.flatMap((l) => p.push(l, readAt));
    expect(out.map((d) => [d.ip, d.kind])).toEqual([
      ['198.51.100.9', 'invalid_user'],
      ['2001:db8::5', 'auth_failure'],
      ['203.0.113.4', 'invalid_user'],
    ]);
  });

  it('gives a failure completed by a later line the kind of the failure', () => {
    const p = new SshParser({ mode: 'aggressive' });
    const lines = [
      'Jun  7 04:10:35 host sshd[424228]: error: kex_exchange_identification: Connection closed by remote host',
      'Jun  7 04:10:35 host sshd[424228]: Connection closed by 192.0.2.15 port 35352',
      'Apr 24 01:39:19 host sshd[3719]: User root not allowed because account is locked',
      'Apr 24 01:39:19 host sshd[3719]: error: Received disconnect from 198.51.100.34: 11: Bye Bye [preauth]',
    ];
    expect(lines.flatMap((l) => p.push(l, 1_750_000_000)).map((d) => [d.ip, d.kind])).toEqual([
      ['192.0.2.15', 'scan'],
      ['198.51.100.34', 'user_not_allowed'],
    ]);
  });

  it('skips messages longer than sshd writes', () => {
    const p = new SshParser({ mode: 'normal' });
    expect(p.push(`Mar  1 10:00:00 h sshd[1]: Invalid user ${'x'.repeat(1200)} from 192.0.2.1 port 22`, 1740900000)).toEqual([]);
    expect(p.stats()).toMatchObject({ sshLines: 1, overlong: 1, detections: 0 });
  });

  it('reads journalctl -o export entries', () => {
    const p = new SshParser({ mode: 'normal' });
    const entry = ['__CURSOR=s=a;i=1', '__REALTIME_TIMESTAMP=1740823200000000', '_HOSTNAME=h', 'SYSLOG_IDENTIFIER=sshd-session', '_PID=91', 'MESSAGE=Invalid user pi from 192.0.2.50 port 22', ''];
    const out = entry.flatMap((l) => p.push(l, 1740900000));
    expect(out).toEqual([{ ts: 1740823200, ip: '192.0.2.50', source: 'ssh_log', kind: 'invalid_user', attempts: 1 }]);
  });

  it('tails the configured file and emits detections', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rampart-sshd-'));
    try {
      const log = join(dir, 'auth.log');
      await writeFile(log, 'Mar  1 09:00:00 h sshd[1]: Invalid user old from 192.0.2.200\n');
      const config = SshSourceConfig.parse({ active: true, ssh_log_location: log });
      const seen: Detection[] = [];
      const stop = new AbortController();
      const running = sshdSource.start(config, 'normal', { log: silent, emit: (d) => seen.push(d), signal: stop.signal, offsets: memoryOffsetStore() });
      const end = Date.now() + 10_000;
      while (seen.length === 0 && Date.now() < end) {
        await appendFile(log, '');
        await new Promise((r) => setTimeout(r, 50));
        if (seen.length === 0) await appendFile(log, `Mar  1 09:00:0${seen.length + 1} h sshd[2]: Failed password for root from 192.0.2.201 port 5 ssh2\n`);
      }
      stop.abort();
      await running.done;
      expect(seen.length).toBeGreaterThan(0);
      // The line present before the start is history (start_at end): never emitted.
      expect(new Set(seen.map((d) => d.ip))).toEqual(new Set(['192.0.2.201']));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
