import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EnvelopeParser, fixedWidthBsd, plainTail } from './envelope.ts';
import { sharedGate, sharedPath } from './testing/shared-folder.ts';

process.env.TZ = 'UTC';
const readAt = Date.UTC(2025, 6, 1) / 1000;

/*
 * Fixed-width BSD stamps take a shorter path (no date captures; the tail read by hand where the
 * TAIL regex can only read it one way). A fraction after the seconds sends the same line through
 * the full BSD regex, with the same time: both must give the same envelope.
 */
function throughRegex(line: string): string {
  return `${line.slice(0, 15)}.0${line.slice(15)}`;
}

function expectSame(lines: string[]): { fast: number; plain: number } {
  const fast = new EnvelopeParser();
  const full = new EnvelopeParser();
  let fixed = 0;
  let plain = 0;
  for (const line of lines) {
    if (!fixedWidthBsd(line)) continue;
    fixed++;
    if (plainTail(line) !== 0) plain++;
    expect(fast.parse(line, readAt), line).toEqual(full.parse(throughRegex(line), readAt));
  }
  return { fast: fixed, plain };
}

const EDGES = [
  'Mar  1 00:00:04 bastion-01 sshd[1202]: Invalid user guest from 147.254.187.124 port 34322',
  'Mar 10 23:59:59 bastion-01 sshd[1202]: Failed password for root from 1.2.3.4 port 5 ssh2',
  'Mar 01 12:00:00 h sshd[1]: leading zero day',
  'Feb 29 12:00:00 h sshd[1]: a leap day',
  'Foo  1 00:00:04 h sshd[1]: not a month',
  'Mar  1 00:00:04 sshd[1202]: no host',
  'Mar  1 00:00:04 h: sshd[1]: a host ending in a colon',
  'Mar  1 00:00:04 [sshd] bracketed program',
  'Mar  1 00:00:04 (sshd) parenthesized program',
  'Mar  1 00:00:04 <auth.info> h sshd[1]: a facility',
  'Mar  1 00:00:04 h sshd[20878]: [ID 800047 auth.info] Failed x',
  'Mar  1 00:00:04 h sshd[20878]:  [ID 800047 auth.info] two spaces',
  'Mar  1 00:00:04 h sshd[20878]: [not an id] brackets',
  'Mar  1 00:00:04 h sudo: no pid',
  'Mar  1 00:00:04 h sshd[12]:no space',
  'Mar  1 00:00:04 h sshd[12] no colon',
  'Mar  1 00:00:04 h sshd[12]',
  'Mar  1 00:00:04 h sshd[12]:',
  'Mar  1 00:00:04 h sshd[12]:   ',
  'Mar  1 00:00:04 h sshd[]: empty pid',
  'Mar  1 00:00:04 h sshd[1a]: letters in the pid',
  'Mar  1 00:00:04 h sshd(pam_unix)[12]: pam',
  'Mar  1 00:00:04 h sshd[12][13]: two pids',
  'Mar  1 00:00:04  h sshd[12]: two spaces after the stamp',
  'Mar  1 00:00:04 h  sshd[12]: two spaces after the host',
  'Mar  1 00:00:04 h\tsshd[12]: a tab',
  'Mar  1 00:00:04 h sshd[12]: carriage\r return',
  'Mar  1 00:00:04 h sshd[12]: line\u2028separator',
  'Mar  1 00:00:04 h sshd[12]: paragraph\u2029separator',
  'Mar  1 00:00:04 hôte sshd[12]: non-ASCII host',
  'Mar  1 00:00:04 h sshd[12]: non-ASCII messäge',
  'Mar  1 00:00:04 h sšhd[12]: non-ASCII program',
  'Mar  1 00:00:04 h\u00a0x sshd[12]: a no-break space',
  'Mar  1 00:00:04 h sshd:x[12]: a colon in the program',
  'Mar  1 00:00:04 h sshd-session[9]: OpenSSH 9.8',
  'Mar  1 00:00:04 h',
  'Mar  1 00:00:04 ',
  'Mar  1 00:00:04',
  `Mar  1 00:00:04 ${'h'.repeat(1100)} sshd[1]: a long host`,
  `Mar  1 00:00:04 h sshd[${'1'.repeat(1100)}]: a long pid`,
];

describe('EnvelopeParser, fixed-width BSD stamps', () => {
  it('gives what the BSD regex gives, for each form the tail can take', () => {
    const { fast, plain } = expectSame(EDGES);
    expect(fast).toBe(EDGES.length);
    expect(plain).toBeGreaterThan(5);
    expect(plain).toBeLessThan(fast);
  });

  it('reuses the minute only while the stamp stays in it', () => {
    const p = new EnvelopeParser();
    const ts = (line: string) => p.parse(line, readAt)?.ts;
    expect(ts('Mar  1 00:00:04 h sshd[1]: a')).toBe(Date.UTC(2025, 2, 1, 0, 0, 4) / 1000);
    expect(ts('Mar  1 00:00:59 h sshd[1]: a')).toBe(Date.UTC(2025, 2, 1, 0, 0, 59) / 1000);
    expect(ts('Mar  1 00:01:00 h sshd[1]: a')).toBe(Date.UTC(2025, 2, 1, 0, 1, 0) / 1000);
    expect(ts('Mar  1 01:01:00 h sshd[1]: a')).toBe(Date.UTC(2025, 2, 1, 1, 1, 0) / 1000);
    expect(ts('Mar 11 01:01:00 h sshd[1]: a')).toBe(Date.UTC(2025, 2, 11, 1, 1, 0) / 1000);
    // December read in July is last year's.
    expect(ts('Dec 11 01:01:00 h sshd[1]: a')).toBe(Date.UTC(2024, 11, 11, 1, 1, 0) / 1000);
  });
});

const ORACLES = sharedPath('oracles/fail2ban');
describe.skipIf(sharedGate('fixed-width BSD envelopes on the fail2ban samples', 'oracles/fail2ban'))('EnvelopeParser on the fail2ban sample logs', () => {
  it('gives what the BSD regex gives for every fixed-width line', () => {
    const lines = readdirSync(ORACLES).flatMap((name) => readFileSync(join(ORACLES, name), 'utf8').split('\n'));
    const { fast, plain } = expectSame(lines);
    expect(fast).toBeGreaterThan(100);
    expect(plain).toBeGreaterThan(50);
  });
});
