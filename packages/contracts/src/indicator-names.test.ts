import { domainToASCII } from 'node:url';
import { describe, expect, it } from 'vitest';
import { canonicalDigest, canonicalDomain, canonicalUrl, digestAlgorithm } from './indicator-names.ts';

describe('canonicalDomain', () => {
  it.each([
    ['Example.COM', 'example.com'],
    ['example.com.', 'example.com'],
    ['Bücher.Example', 'xn--bcher-kva.example'],
    ['xn--bcher-kva.EXAMPLE.', 'xn--bcher-kva.example'],
    ['faß.de', 'xn--fa-hia.de'],
    ['  padded.example  ', 'padded.example'],
    ['ＥＸＡＭＰＬＥ.com', 'example.com'],
  ])('%s -> %s', (input, expected) => expect(canonicalDomain(input)).toBe(expected));

  it.each([
    'localhost',
    '192.0.2.1',
    'a..b',
    '-a.example',
    'a_b.example',
    `${'a'.repeat(64)}.example`,
    '',
    'example.com:80',
    'user@example.com',
    'example.com/path',
    'exa mple.com',
    'example.com?x',
    '[::1]',
    'ex%41mple.com',
    'a\tb.example',
  ])('refuses %j', (input) => expect(canonicalDomain(input)).toBeUndefined());

  // The browser-safe IDNA path (WHATWG URL) gives what Node's domainToASCII gives.
  it.each(['Bücher.example', 'faß.de', 'ＥＸＡＭＰＬＥ.com', 'xn--bcher-kva.example', 'straße.example', 'Ⅻ.example', 'ma\u00f1ana.com'])(
    'agrees with node:url domainToASCII on %s',
    (input) => expect(canonicalDomain(input)).toBe(domainToASCII(input)),
  );
});

describe('canonicalUrl', () => {
  it.each([
    ['HTTP://Example.COM.:80/A/b?Q=1#frag', 'http://example.com/A/b?Q=1'],
    ['https://example.com:443', 'https://example.com/'],
    ['ftp://Files.Example:21/pub', 'ftp://files.example/pub'],
    ['http://Bücher.example/ä b', 'http://xn--bcher-kva.example/%C3%A4%20b'],
  ])('%s -> %s', (input, expected) => expect(canonicalUrl(input)).toBe(expected));

  it.each(['not a url', 'javascript:alert(1)', 'file:///etc/passwd', `http://example.com/${'ä'.repeat(400)}`])('refuses %s', (input) =>
    expect(canonicalUrl(input)).toBeUndefined(),
  );
});

describe('canonicalDigest', () => {
  const md5 = 'd41d8cd98f00b204e9800998ecf8427e';
  it('upper-cases MD5, SHA1 and SHA256 and names the algorithm by length', () => {
    expect(canonicalDigest(md5)).toBe(md5.toUpperCase());
    expect(canonicalDigest(` ${'a'.repeat(40)} `)).toBe('A'.repeat(40));
    expect(canonicalDigest('b'.repeat(64))).toBe('B'.repeat(64));
    expect(digestAlgorithm(md5.toUpperCase())).toBe('md5');
    expect(digestAlgorithm('A'.repeat(40))).toBe('sha1');
    expect(digestAlgorithm('B'.repeat(64))).toBe('sha256');
  });
  it.each(['', 'g'.repeat(32), 'a'.repeat(33), 'a'.repeat(63), 'md5:' + md5])('refuses %j', (input) => expect(canonicalDigest(input)).toBeUndefined());
});
