import { describe, expect, it } from 'vitest';
import { canonicalDigest, canonicalDomain, canonicalIpv4Cidr, canonicalUrl } from '@rampart/contracts';
import { INDICATOR_KINDS, codecOf, domainCodec, fileCodec, ipv4Codec, urlCodec } from './kinds.ts';

describe('kind codecs', () => {
  it('are the contracts canonical forms, one per kind', () => {
    expect(ipv4Codec.canonical).toBe(canonicalIpv4Cidr);
    expect(domainCodec.canonical).toBe(canonicalDomain);
    expect(urlCodec.canonical).toBe(canonicalUrl);
    expect(fileCodec.canonical).toBe(canonicalDigest);
    expect(INDICATOR_KINDS.map((k) => codecOf(k).kind)).toEqual(['ipv4', 'domain', 'url', 'file']);
  });

  it.each([
    [ipv4Codec, ['203.0.113.7', '198.51.100.9/24', '010.0.0.1'], ['203.0.113.7/32', '198.51.100.0/24', undefined]],
    [domainCodec, ['Bücher.Example.', 'EVIL.example', '192.0.2.1'], ['xn--bcher-kva.example', 'evil.example', undefined]],
    [urlCodec, ['HTTP://Evil.Example:80/a#x', 'javascript:alert(1)'], ['http://evil.example/a', undefined]],
    [fileCodec, ['a'.repeat(32), 'a'.repeat(31)], ['A'.repeat(32), undefined]],
  ])('%#: canonical forms', (codec, raw, want) => expect(raw.map((r) => codec.canonical(r))).toEqual(want));

  it('order: IPv4 numerically, the others by code units', () => {
    expect(['203.0.113.7/32', '45.77.0.0/16', '198.51.100.0/24'].sort(ipv4Codec.compare)).toEqual(['45.77.0.0/16', '198.51.100.0/24', '203.0.113.7/32']);
    expect(['b.example', 'a-b.example', 'a.example'].sort(domainCodec.compare)).toEqual(['a-b.example', 'a.example', 'b.example']);
    expect(['https://a.example/', 'http://b.example/'].sort(urlCodec.compare)).toEqual(['http://b.example/', 'https://a.example/']);
    expect(domainCodec.compare('a.example', 'a.example')).toBe(0);
  });
});
