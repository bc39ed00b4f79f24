import { describe, expect, it } from 'vitest';
import { canonicalIpv4Cidr, parseIpv4Cidr, rangeToCidrs, sortCidrsFast } from './ipv4-range.ts';
import fc from 'fast-check';
import { canonicalCidr, sortCidrs } from './block-list.ts';

describe('IPv4 ranges', () => {
  it('canonicalises strict dotted quads and rejects everything else', () => {
    expect(['203.0.113.7', '203.0.113.7/32', '198.51.100.9/24', '0.0.0.0/0', '255.255.255.255', '10.1.2.3/8'].map(canonicalIpv4Cidr)).toEqual([
      '203.0.113.7/32',
      '203.0.113.7/32',
      '198.51.100.0/24',
      '0.0.0.0/0',
      '255.255.255.255/32',
      '10.0.0.0/8',
    ]);
    for (const bad of ['', '1.2.3', '1.2.3.4.5', '256.1.1.1', '01.2.3.4', '1.2.3.4/33', '1.2.3.4/', '1.2.3.4/024', ' 1.2.3.4', '1.2.3.4 ', '1.2.3.x', '::1', '1.2.3.4/3a', '1234.1.1.1']) {
      expect(canonicalIpv4Cidr(bad), bad).toBeNull();
    }
    expect(parseIpv4Cidr('192.0.2.130/25')).toEqual({ start: 0xc0000280, end: 0xc00002ff, prefix: 25 });
  });

  it('splits ranges into the fewest CIDRs', () => {
    expect(rangeToCidrs(parseIpv4Cidr('10.0.0.0')!.start, parseIpv4Cidr('10.0.1.255')!.start)).toEqual(['10.0.0.0/23']);
    expect(rangeToCidrs(parseIpv4Cidr('10.0.0.1')!.start, parseIpv4Cidr('10.0.0.6')!.start)).toEqual(['10.0.0.1/32', '10.0.0.2/31', '10.0.0.4/31', '10.0.0.6/32']);
    expect(rangeToCidrs(0, 0xffffffff)).toEqual(['0.0.0.0/0']);
  });

  it('sorts like sortCidrs', () => {
    const xs = ['9.0.0.0/8', '10.0.0.0/24', '10.0.0.0/8', '192.0.2.1/32', '100.64.0.0/10'];
    expect(sortCidrsFast(xs)).toEqual(sortCidrs(xs));
  });

  it('agrees with canonicalCidr on every dotted quad with or without a prefix', () => {
    const octet = fc.integer({ min: 0, max: 255 });
    fc.assert(
      fc.property(fc.tuple(octet, octet, octet, octet), fc.option(fc.integer({ min: 0, max: 32 })), (o, prefix) => {
        const text = o.join('.') + (prefix === null ? '' : `/${prefix}`);
        expect(canonicalIpv4Cidr(text)).toBe(canonicalCidr(text));
      }),
      { numRuns: 2000 },
    );
  });
});
