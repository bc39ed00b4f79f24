import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { memoryOffsetStore } from '@rampart/plugin-kit';
import type { Detection } from '@rampart/plugin-kit';
import { freePort, systemGate, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { Client } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SshSourceConfig, sshdSource } from './index.ts';

/*
 * A real OpenSSH sshd on a loopback port, attacked by an SSH client (ssh2) from two loopback
 * addresses. `sshd -e` writes its messages bare (there is no syslog daemon here), so the test
 * adds the envelope rsyslog would add (time, host, `sshd[<pid>]:`) and appends to an auth.log
 * that the source tails.
 */

const SSHD = '/usr/sbin/sshd';
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function syslogTime(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${MONTHS[d.getMonth()]} ${String(d.getDate()).padStart(2, ' ')} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** One password attempt as `user` from `from`; resolves when sshd has refused it. */
function attempt(port: number, from: string, username: string): Promise<string> {
  return new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port, localAddress: from });
    const client = new Client();
    client.on('error', (err) => resolve(err.message));
    client.on('ready', () => {
      client.end();
      resolve('logged in');
    });
    client.connect({ sock, username, password: 'not-the-password', tryKeyboard: false, readyTimeout: 10_000 });
  });
}

describe.skipIf(systemGate('ssh_log against a real OpenSSH sshd', { commands: [SSHD, 'ssh-keygen'], root: true }))('ssh_log against a real sshd', () => {
  let dir: string;
  let port: number;
  let sshd: ChildProcess;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rampart-sshd-'));
    port = await freePort();
    await mkdir('/run/sshd', { recursive: true }); // sshd's privilege-separation directory
    await new Promise<void>((resolve, reject) =>
      spawn('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host_key')]).on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ssh-keygen ${code}`)))),
    );
    await writeFile(
      join(dir, 'sshd_config'),
      [`Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${join(dir, 'host_key')}`, `PidFile ${join(dir, 'sshd.pid')}`, 'PasswordAuthentication yes', 'KbdInteractiveAuthentication no', 'UsePAM no', 'PermitRootLogin yes', 'StrictModes no', 'LogLevel VERBOSE', ''].join('\n'),
    );
    const log = join(dir, 'auth.log');
    await writeFile(log, '');
    sshd = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let listening!: () => void;
    const ready = new Promise<void>((resolve) => (listening = resolve));
    createInterface({ input: sshd.stderr! }).on('line', (line) => {
      appendFileSync(log, `${syslogTime(new Date())} testhost sshd[${sshd.pid}]: ${line}\n`);
      if (line.startsWith('Server listening on')) listening();
    });
    await ready;
  });

  afterAll(async () => {
    // sshd writes a last line ("Received signal 15; terminating.") as it stops: the folder its log
    // is in goes only once its stderr is closed ('close' comes after every line was read), or the
    // line's append fails after the suite (an unhandled error in CI).
    if (sshd && sshd.exitCode === null && sshd.signalCode === null) {
      const closed = new Promise((resolve) => sshd.once('close', resolve));
      sshd.kill('SIGTERM');
      await closed;
    }
    await rm(dir, { recursive: true, force: true });
  });

  it('reports the failed password and the invalid user, each from its own address', async () => {
    const config = SshSourceConfig.parse({ active: true, ssh_log_location: join(dir, 'auth.log'), options: { start_at: 'beginning' } });
    const seen: Detection[] = [];
    const stop = new AbortController();
    const running = sshdSource.start(config, 'normal', { log: silent, emit: (d) => seen.push(d), signal: stop.signal, offsets: memoryOffsetStore() });
    try {
      expect(await attempt(port, '127.0.0.3', 'root')).toBe('All configured authentication methods failed');
      expect(await attempt(port, '127.0.0.4', 'nosuchuser')).toBe('All configured authentication methods failed');
      const end = Date.now() + 15_000;
      while (seen.length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    } finally {
      stop.abort();
      await running.done;
    }
    expect(seen.map((d) => `${d.ip} ${d.kind}`)).toEqual(['127.0.0.3 auth_failure', '127.0.0.4 invalid_user', '127.0.0.4 invalid_user']);
    expect(seen.every((d) => Math.abs(d.ts - Date.now() / 1000) < 120)).toBe(true);
  });
});
