import { describe, expect, it } from 'vitest';
import { EnvelopeParser, JournalExportAssembler } from './envelope.ts';

process.env.TZ = 'UTC';
const readAt = Date.UTC(2025, 6, 1) / 1000;
const at = (iso: string) => Date.parse(iso) / 1000;

describe('EnvelopeParser', () => {
  const p = new EnvelopeParser();
  it('parses BSD syslog with host, pid and infers the year from readAt', () => {
    expect(p.parse('Jun  5 01:02:03 bastion sshd[12]: Failed password for x', readAt)).toEqual({
      ts: at('2025-06-05T01:02:03Z'), host: 'bastion', program: 'sshd', pid: '12', message: 'Failed password for x',
    });
    // December read in July is last year's December.
    expect(p.parse('Dec 31 23:59:59 h sshd-session[7]: m', readAt)?.ts).toBe(at('2024-12-31T23:59:59Z'));
  });
  it('handles no host, bracketed programs, Solaris IDs and fractional seconds', () => {
    expect(p.parse('Nov 23 21:50:19 sshd[8148]: Disconnecting: x', readAt)).toMatchObject({ host: '', program: 'sshd', pid: '8148', message: 'Disconnecting: x' });
    expect(p.parse('Jun 25 23:53:34 [sshd] User root from 1.2.3.4', readAt)).toMatchObject({ host: '', program: 'sshd', message: 'User root from 1.2.3.4' });
    expect(p.parse('Mar 29 05:59:23 dusky sshd[20878]: [ID 800047 auth.info] Failed x', readAt)).toMatchObject({ host: 'dusky', message: 'Failed x' });
    expect(p.parse('Jan 15 10:00:00.123456 h kernel: [ 1.2] IN=eth0', readAt)).toMatchObject({ program: 'kernel', pid: '', message: '[ 1.2] IN=eth0' });
  });
  it('parses ISO and RFC 5424 timestamps with zones', () => {
    expect(p.parse('2015-04-16T18:02:50.568798+00:00 host sshd[2716]: Connection closed', readAt)).toEqual({
      ts: at('2015-04-16T18:02:50.568798Z'), host: 'host', program: 'sshd', pid: '2716', message: 'Connection closed',
    });
    expect(p.parse('<38>1 2019-07-08T17:40:17.954167-04:00 h.example.com sshd 55555 - [tq a="1"][x@1 t="[b]"] Failed unknown', readAt)).toEqual({
      ts: at('2019-07-08T21:40:17.954167Z'), host: 'h.example.com', program: 'sshd', pid: '55555', message: 'Failed unknown',
    });
  });
  it('parses journald JSON lines and rejects other text', () => {
    const line = JSON.stringify({ __REALTIME_TIMESTAMP: '1700000000123456', _HOSTNAME: 'h', SYSLOG_IDENTIFIER: 'sshd-session', _PID: '9', MESSAGE: 'Invalid user a from 192.0.2.1' });
    expect(p.parse(line, readAt)).toEqual({ ts: 1700000000.123, host: 'h', program: 'sshd-session', pid: '9', message: 'Invalid user a from 192.0.2.1' });
    expect(p.parse('{not json', readAt)).toBeUndefined();
    // journald's own fields win over the identifier a sender chose.
    const forged = JSON.stringify({ __REALTIME_TIMESTAMP: '1', SYSLOG_IDENTIFIER: 'sshd', _COMM: 'logger', MESSAGE: 'Invalid user a from 192.0.2.1' });
    expect(p.parse(forged, readAt)?.program).toBe('logger');
    const kernel = JSON.stringify({ __REALTIME_TIMESTAMP: '1', _TRANSPORT: 'kernel', SYSLOG_IDENTIFIER: 'kernel', MESSAGE: 'IN=eth0' });
    expect(p.parse(kernel, readAt)?.program).toBe('kernel');
    expect(p.parse('hello world', readAt)).toBeUndefined();
  });
});

describe('JournalExportAssembler', () => {
  it('assembles KEY=VALUE blocks separated by blank lines', () => {
    const a = new JournalExportAssembler();
    const lines = ['__CURSOR=s=1', '__REALTIME_TIMESTAMP=1700000000000000', '_HOSTNAME=h', 'SYSLOG_IDENTIFIER=sshd', '_PID=4', 'MESSAGE=Invalid user a from 192.0.2.1', ''];
    const out = lines.map((l) => a.push(l));
    expect(out.slice(0, -1).every((o) => o === null)).toBe(true);
    expect(out.at(-1)).toEqual({ ts: 1700000000, host: 'h', program: 'sshd', pid: '4', message: 'Invalid user a from 192.0.2.1' });
    expect(a.push('Jan  1 00:00:00 h sshd[1]: x')).toBeUndefined();
  });
});
