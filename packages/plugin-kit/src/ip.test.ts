import { describe, expect, it } from 'vitest';
import { canonicalIp } from './ip.ts';

describe('canonicalIp', () => {
  it('keeps canonical IPv4 and strips leading zeros', () => {
    expect(canonicalIp('203.0.113.7')).toBe('203.0.113.7');
    expect(canonicalIp('192.030.0.6')).toBe('192.30.0.6');
    expect(canonicalIp('256.1.1.1')).toBeUndefined();
    expect(canonicalIp('1.2.3')).toBeUndefined();
  });
  it('unwraps IPv4-mapped IPv6 and brackets', () => {
    expect(canonicalIp('::ffff:1.2.3.4')).toBe('1.2.3.4');
    expect(canonicalIp('::FFFF:218.249.210.161')).toBe('218.249.210.161');
    expect(canonicalIp('[2001:db8::1]')).toBe('2001:db8::1');
  });
  it('puts IPv6 in RFC 5952 form', () => {
    expect(canonicalIp('2001:DB8:0:0:0:0:0:1')).toBe('2001:db8::1');
    expect(canonicalIp('aaaa:bbbb:cccc:1234::1:1')).toBe('aaaa:bbbb:cccc:1234::1:1');
    expect(canonicalIp('fe80::1%eth0')).toBe('fe80::1');
  });
  it('rejects host names and junk', () => {
    expect(canonicalIp('example.com')).toBeUndefined();
    expect(canonicalIp('')).toBeUndefined();
    expect(canonicalIp('::g')).toBeUndefined();
  });
});
