import { describe, expect, it } from 'vitest';
import { parseStixPattern } from './stix-pattern.ts';
import { stix21Pattern } from './stix21.ts';

describe('parseStixPattern', () => {
  it('reads back what stix21Pattern writes', () => {
    expect(parseStixPattern(stix21Pattern({ kind: 'ipv4', value: '45.77.1.0/24', isNetwork: true }))).toEqual({ kind: 'ipv4', value: '45.77.1.0/24' });
    expect(parseStixPattern(stix21Pattern({ kind: 'url', value: "http://evil.example/it's" }))).toEqual({ kind: 'url', value: "http://evil.example/it's" });
  });

  it('names a file by its longest digest when several are joined by OR', () => {
    const md5 = 'a'.repeat(32);
    const sha256 = 'b'.repeat(64);
    expect(parseStixPattern(`[file:hashes.MD5 = '${md5}' OR file:hashes.'SHA-256' = '${sha256}']`)).toEqual({ kind: 'file', value: sha256 });
  });

  it.each([
    ["[email-message:from_ref.value = 'a@b.example']", 'unsupported_type', 'email-message is not an indicator kind Rampart holds'],
    ["[ipv4-addr:value = '1.2.3.4'] AND [domain-name:value = 'a.example']", 'unsupported_type', 'patterns joining several observations are not imported'],
    ["[ipv4-addr:value = '1.2.3.4' OR domain-name:value = 'a.example']", 'unsupported_type', 'a pattern naming several observables is not imported'],
    ["ipv4-addr:value = '1.2.3.4'", 'malformed', 'a pattern is one observation expression in brackets'],
    ['[ipv4-addr:value = 1.2.3.4]', 'malformed', 'cannot read the comparison ipv4-addr:value = 1.2.3.4'],
  ])('refuses %s', (pattern, problem, message) => {
    expect(parseStixPattern(pattern)).toEqual({ problem, message });
  });
});
