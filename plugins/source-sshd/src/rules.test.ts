import { readFileSync } from 'node:fs';
import { EnvelopeParser } from '@rampart/plugin-kit';
import { sharedGate, sharedPath } from '@rampart/plugin-kit/testing';
import { describe, expect, it } from 'vitest';
import { sshRules, unnamed } from './rules.ts';
import type { GroupName } from './rules.ts';

const NAMES: GroupName[] = ['ip4', 'ip6', 'dns', 'user', 'ruser', 'nf'];

/** The rules match without named groups: each name's index must hold what the named group holds. */
function expectSameGroups(messages: string[]): number {
  let matched = 0;
  for (const mode of ['normal', 'aggressive'] as const) {
    for (const rule of sshRules(mode)) {
      const named = new RegExp(rule.source);
      for (const message of messages) {
        const want = named.exec(message);
        const got = rule.re.exec(message);
        expect(got === null, `${rule.source} on ${message}`).toBe(want === null);
        if (!want || !got) continue;
        matched++;
        expect(got[0]).toBe(want[0]);
        for (const name of NAMES) expect(rule.at[name] ? got[rule.at[name]] : undefined, `${name} of ${message}`).toBe(want.groups?.[name]);
      }
    }
  }
  return matched;
}

const SAMPLES = [
  'Failed password for invalid user admin from 198.51.100.9 port 4242 ssh2',
  'Failed publickey for root from 2001:db8::1 port 22 ssh2: RSA SHA256:abc',
  'Failed password for root from host.example.com port 22 ssh2',
  'Invalid user oracle from ::ffff:192.0.2.7 port 5',
  'pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser=bob rhost=203.0.113.5  user=root',
  'pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=203.0.113.5',
  'Connection closed by authenticating user root 203.0.113.5 port 22 [preauth]',
  'Disconnected from invalid user a b 203.0.113.5 port 22 [preauth]',
  'Received disconnect from 203.0.113.5 port 22:11: Bye Bye [preauth]',
  'Received disconnect from 203.0.113.5 port 22:3: com.jcraft.jsch.JSchException: Auth fail [preauth]',
  'User root from 203.0.113.5 not allowed because not listed in AllowUsers',
  'Accepted publickey for deploy from 203.0.113.5 port 22 ssh2',
  'Did not receive identification string from 203.0.113.5',
  'Unable to negotiate with 203.0.113.5 port 22: no matching key exchange method found.',
  'refused connect from host (203.0.113.5)',
];

describe('ssh rules without named groups', () => {
  it('numbers groups by their opening parenthesis, past escapes, classes and lookarounds', () => {
    const source = String.raw`^\((?:a)(?<ip4>[(\]]+)(?=x)(?<=(?:x))(b)(?<user>c|\(d\))(?!e)`;
    const { re, at } = unnamed(source);
    expect(re.source).toBe(String.raw`^\((?:a)([(\]]+)(?=x)(?<=(?:x))(b)(c|\(d\))(?!e)`);
    expect(at).toEqual({ ip4: 1, ip6: 0, dns: 0, user: 3, ruser: 0, nf: 0 });
    expect(() => unnamed('(?<other>x)')).toThrow(/unexpected group other/);
  });

  it('capture what the named patterns capture', () => {
    expect(expectSameGroups(SAMPLES)).toBeGreaterThanOrEqual(SAMPLES.length);
  });
});

const ORACLE = sharedPath('oracles/fail2ban/sshd');
describe.skipIf(sharedGate('ssh rules on the fail2ban sshd sample', 'oracles/fail2ban/sshd'))('ssh rules on the fail2ban sshd sample', () => {
  it('capture what the named patterns capture on every message', () => {
    const envelopes = new EnvelopeParser();
    const messages = readFileSync(ORACLE, 'utf8')
      .split('\n')
      .map((line) => envelopes.parse(line, Date.UTC(2005, 7, 14) / 1000)?.message)
      .filter((m): m is string => m !== undefined)
      .flatMap((m) => [m, m.replace(/^(?:error|fatal): (?:PAM: )?/, '')]);
    expect(messages.length).toBeGreaterThan(200);
    expect(expectSameGroups(messages)).toBeGreaterThan(200);
  });
});
