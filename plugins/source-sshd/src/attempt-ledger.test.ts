import type { DetectionMode } from '@rampart/plugin-kit';
import { describe, expect, it } from 'vitest';
import { AttemptCounts } from './attempt-ledger.ts';
import { SshParser } from './parser.ts';

const READ_AT = Date.parse('2025-03-08T00:00:00Z') / 1000;

/** Parses syslog lines; returns `kind attempts` per detection. */
function run(mode: DetectionMode, lines: string[]): string[] {
  const p = new SshParser({ mode });
  return lines.flatMap((l) => p.push(l, READ_AT)).map((d) => `${d.ip} ${d.kind} ${d.attempts}`);
}

// The connection shapes gen-authlog.py writes (one attacker try each), as OpenSSH logs them.
const invalidUserWithPassword = (pid: number, port: number) => [
  `Mar  1 10:00:00 h sshd[${pid}]: Invalid user guest from 45.33.12.7 port ${port}`,
  `Mar  1 10:00:01 h sshd[${pid}]: pam_unix(sshd:auth): check pass; user unknown`,
  `Mar  1 10:00:01 h sshd[${pid}]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=45.33.12.7`,
  `Mar  1 10:00:03 h sshd[${pid}]: Failed password for invalid user guest from 45.33.12.7 port ${port} ssh2`,
  `Mar  1 10:00:04 h sshd[${pid}]: Received disconnect from 45.33.12.7 port ${port}:11: Bye Bye [preauth]`,
  `Mar  1 10:00:04 h sshd[${pid}]: Disconnected from invalid user guest 45.33.12.7 port ${port} [preauth]`,
];
const rootPasswords = (pid: number, port: number) => [
  `Mar  1 10:01:00 h sshd[${pid}]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=45.33.12.7  user=root`,
  ...[2, 4, 6].map((s) => `Mar  1 10:01:0${s} h sshd[${pid}]: Failed password for root from 45.33.12.7 port ${port} ssh2`),
  `Mar  1 10:01:07 h sshd[${pid}]: Connection closed by authenticating user root 45.33.12.7 port ${port} [preauth]`,
  `Mar  1 10:01:07 h sshd[${pid}]: PAM 2 more authentication failures; logname= uid=0 euid=0 tty=ssh ruser= rhost=45.33.12.7  user=root`,
];

describe('ssh_log attempts: one failed authentication attempt counts once', () => {
  it('counts "Invalid user" and its "Failed password" as one attempt', () => {
    expect(run('normal', invalidUserWithPassword(100, 40000))).toEqual(['45.33.12.7 invalid_user 1', '45.33.12.7 invalid_user 0']);
  });

  it('counts each failed password once, whatever PAM also logs', () => {
    expect(run('normal', rootPasswords(101, 40001))).toEqual(['45.33.12.7 auth_failure 1', '45.33.12.7 auth_failure 1', '45.33.12.7 auth_failure 1']);
  });

  it('adds nothing for the pre-auth disconnect of a counted connection (aggressive mode)', () => {
    expect(run('aggressive', [...invalidUserWithPassword(102, 40002), ...rootPasswords(103, 40003)])).toEqual([
      '45.33.12.7 invalid_user 1',
      '45.33.12.7 invalid_user 0',
      '45.33.12.7 auth_abandoned 0',
      '45.33.12.7 auth_failure 1',
      '45.33.12.7 auth_failure 1',
      '45.33.12.7 auth_failure 1',
      '45.33.12.7 auth_abandoned 0',
    ]);
  });

  it('counts a pre-auth disconnect or a scan without other lines as one attempt of its kind', () => {
    expect(
      run('aggressive', [
        'Mar  1 10:02:00 h sshd[104]: Connection closed by authenticating user root 45.33.12.8 port 40004 [preauth]',
        'Mar  1 10:02:01 h sshd[105]: error: kex_exchange_identification: Connection closed by remote host',
        'Mar  1 10:02:01 h sshd[105]: Connection closed by 45.33.12.9 port 40005',
        'Mar  1 10:02:02 h sshd[106]: Connection closed by 45.33.12.10 port 40006 [preauth]',
      ]),
    ).toEqual(['45.33.12.8 auth_abandoned 1', '45.33.12.9 scan 1', '45.33.12.10 preauth_disconnect 1']);
  });

  it('does not count "Too many authentication failures" as another attempt', () => {
    const lines = [1, 2, 3, 4, 5, 6].map((s) => `Mar  1 10:03:0${s} h sshd[106]: Failed password for root from 45.33.12.7 port 40006 ssh2`);
    lines.push('Mar  1 10:03:06 h sshd[106]: error: maximum authentication attempts exceeded for root from 45.33.12.7 port 40006 ssh2 [preauth]');
    lines.push('Mar  1 10:03:06 h sshd[106]: Disconnecting authenticating user root 45.33.12.7 port 40006: Too many authentication failures [preauth]');
    expect(run('normal', lines).map((d) => Number(d.split(' ')[2]))).toEqual([1, 1, 1, 1, 1, 1, 0]);
  });

  it('counts a refused change of user name as a new attempt', () => {
    expect(
      run('normal', [
        'Mar  1 10:04:00 h sshd[107]: Invalid user admin from 45.33.12.7 port 40007',
        'Mar  1 10:04:01 h sshd[107]: Disconnecting invalid user admin 45.33.12.7 port 40007: Change of username or service not allowed: (admin,ssh-connection) -> (user,ssh-connection) [preauth]',
      ]),
    ).toEqual(['45.33.12.7 invalid_user 1', '45.33.12.7 user_change 1']);
  });

  it('tells apart connections that reuse a pid by their address and port', () => {
    const reused = [...invalidUserWithPassword(108, 40008), ...invalidUserWithPassword(108, 40009)];
    expect(run('normal', reused)).toEqual(['45.33.12.7 invalid_user 1', '45.33.12.7 invalid_user 0', '45.33.12.7 invalid_user 1', '45.33.12.7 invalid_user 0']);
  });
});

describe('AttemptCounts', () => {
  it('takes the largest channel and hands out each attempt once', () => {
    const c = new AttemptCounts();
    c.record('45.33.12.7', 1, 'floor');
    c.record(undefined, undefined, 'pam');
    expect(c.take()).toBe(1);
    c.record('45.33.12.7', 1, 'each');
    expect(c.take()).toBe(0);
    c.record('45.33.12.7', 1, 'each');
    c.record('45.33.12.7', 1, 'more');
    expect(c.take()).toBe(2);
    c.record('45.33.12.7', 2, 'floor'); // another port: the pid was reused
    expect(c.take()).toBe(1);
  });

  it('forgets a connection 600 s after its last line', () => {
    const lines = [
      'Mar  1 10:00:00 h sshd[109]: Invalid user guest from 45.33.12.7 port 40010',
      'Mar  1 10:00:02 h sshd[109]: Failed password for invalid user guest from 45.33.12.7 port 40010 ssh2',
      'Mar  1 10:10:03 h sshd[109]: Failed password for invalid user guest from 45.33.12.7 port 40010 ssh2',
    ];
    expect(run('normal', lines)).toEqual(['45.33.12.7 invalid_user 1', '45.33.12.7 invalid_user 0', '45.33.12.7 invalid_user 1']);
  });
});

describe('ssh_log key probes in normal mode', () => {
  /** Like run(), but marks the attempts only the policy counts. */
  const runAll = (mode: DetectionMode, lines: string[]) => {
    const p = new SshParser({ mode });
    return lines.flatMap((l) => p.push(l, READ_AT)).map((d) => `${d.ip} ${d.kind} ${d.attempts}${d.policyOnly ? ' policy-only' : ''}`);
  };
  const keyProbe = (pid: number, port: number, ip = '45.33.12.8') =>
    `Mar  1 10:05:00 h sshd[${pid}]: Connection closed by authenticating user root ${ip} port ${port} [preauth]`;

  it('counts a key probe alone on its connection as one attempt for the policy only', () => {
    expect(runAll('normal', [keyProbe(110, 40010), keyProbe(111, 40011)])).toEqual([
      '45.33.12.8 auth_abandoned 1 policy-only',
      '45.33.12.8 auth_abandoned 1 policy-only',
    ]);
    // Aggressive mode: the same line is one of fail2ban's detections.
    expect(runAll('aggressive', [keyProbe(110, 40010)])).toEqual(['45.33.12.8 auth_abandoned 1']);
  });

  it('adds nothing for the close of a connection whose failures were counted, whichever way it ends', () => {
    // "Connection closed by authenticating user" after the failed passwords, and
    // "Received disconnect" + "Disconnected from authenticating user" (fail2ban forgets the
    // connection at the first of the two).
    const politely = (pid: number, port: number) => [
      `Mar  1 10:06:00 h sshd[${pid}]: Failed password for root from 45.33.12.7 port ${port} ssh2`,
      `Mar  1 10:06:01 h sshd[${pid}]: Received disconnect from 45.33.12.7 port ${port}:11: Bye Bye [preauth]`,
      `Mar  1 10:06:01 h sshd[${pid}]: Disconnected from authenticating user root 45.33.12.7 port ${port} [preauth]`,
    ];
    expect(runAll('normal', [...rootPasswords(112, 40012), ...politely(113, 40013), ...invalidUserWithPassword(114, 40014)])).toEqual([
      '45.33.12.7 auth_failure 1',
      '45.33.12.7 auth_failure 1',
      '45.33.12.7 auth_failure 1',
      '45.33.12.7 auth_failure 1',
      '45.33.12.7 invalid_user 1',
      '45.33.12.7 invalid_user 0',
    ]);
  });

  it('counts a pre-auth close without a user name, or without [preauth], as nothing in normal mode', () => {
    expect(
      runAll('normal', [
        'Mar  1 10:07:00 h sshd[115]: Connection closed by 45.33.12.9 port 40015 [preauth]',
        'Mar  1 10:07:01 h sshd[116]: Connection closed by authenticating user root 45.33.12.9 port 40016',
      ]),
    ).toEqual([]);
  });
});
