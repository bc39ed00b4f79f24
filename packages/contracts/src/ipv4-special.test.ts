import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { describeIpv4Special, formatIpv4, IPV4_SPECIAL_RANGES, ipv4SpecialRange, parseIpv4 } from './index.ts';

/** ipaddr.js's name for each of our classes. */
const IPADDR_NAME: Record<string, string> = {
  unspecified: 'unspecified',
  'this network': 'unspecified',
  private: 'private',
  'carrier-grade NAT': 'carrierGradeNat',
  loopback: 'loopback',
  'link-local': 'linkLocal',
  'IETF protocol assignments': 'reserved',
  documentation: 'reserved',
  '6to4 relay anycast': 'reserved',
  benchmarking: 'reserved',
  multicast: 'multicast',
  reserved: 'reserved',
  broadcast: 'broadcast',
};
/** ipaddr.js names of globally reachable registry entries (IANA "Globally Reachable: True"). */
const IPADDR_PUBLIC = new Set(['unicast', 'as112', 'amt']);
/** Globally reachable inside 192.0.0.0/24 (PCP anycast, TURN anycast), which ipaddr.js calls reserved. */
const EXCEPTIONS = new Set(['192.0.0.9', '192.0.0.10']);

function single(address: string) {
  return ipv4SpecialRange(parseIpv4(address)!);
}

describe('IPv4 special-purpose table', () => {
  it('lists the same networks as ipaddr.js (bar its globally reachable as112 and amt)', () => {
    const ours = IPV4_SPECIAL_RANGES.map((r) => `${r.cidr} ${IPADDR_NAME[r.class]}`).sort();
    const theirs = Object.entries((ipaddr.IPv4.prototype as unknown as { SpecialRanges: Record<string, Array<[ipaddr.IPv4, number]>> }).SpecialRanges)
      .filter(([name]) => !IPADDR_PUBLIC.has(name))
      .flatMap(([name, nets]) => nets.map(([ip, prefix]) => `${ip.toString()}/${prefix} ${name}`));
    // ipaddr.js has 0.0.0.0/8 only; we name 0.0.0.0/32 apart (unspecified within "this network").
    expect(ours).toEqual([...theirs, '0.0.0.0/32 unspecified'].sort());
  });

  it('agrees with ipaddr.js range() on every range edge, its neighbours and 20,000 random addresses', () => {
    const probes = new Set<number>();
    for (const r of IPV4_SPECIAL_RANGES) for (const v of [r.start - 1, r.start, r.start + 1, r.end - 1, r.end, r.end + 1]) if (v >= 0 && v <= 0xffffffff) probes.add(v);
    let seed = 12345;
    for (let i = 0; i < 20_000; i += 1) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      probes.add(seed);
    }
    for (const e of EXCEPTIONS) probes.add(parseIpv4(e)!.start);
    for (const value of probes) {
      const address = formatIpv4(value);
      const theirs = ipaddr.IPv4.parse(address).range();
      const ours = single(address);
      if (EXCEPTIONS.has(address)) {
        expect([address, ours]).toEqual([address, undefined]);
        continue;
      }
      expect([address, ours ? IPADDR_NAME[ours.class] : 'public']).toEqual([address, IPADDR_PUBLIC.has(theirs) ? 'public' : theirs]);
    }
  });

  it('names the range a network lies in or overlaps', () => {
    expect(describeIpv4Special(single('10.1.2.3')!)).toBe('10.0.0.0/8 (private)');
    expect(describeIpv4Special(single('0.0.0.0')!)).toBe('0.0.0.0/32 (unspecified)');
    expect(describeIpv4Special(single('0.1.2.3')!)).toBe('0.0.0.0/8 (this network)');
    expect(describeIpv4Special(single('255.255.255.255')!)).toBe('255.255.255.255/32 (broadcast)');
    expect(describeIpv4Special(single('255.255.255.254')!)).toBe('240.0.0.0/4 (reserved)');
    expect(describeIpv4Special(ipv4SpecialRange(parseIpv4('8.0.0.0/5')!)!)).toBe('10.0.0.0/8 (private)');
    expect(describeIpv4Special(ipv4SpecialRange(parseIpv4('192.0.0.8/30')!)!)).toBe('192.0.0.0/24 (IETF protocol assignments)');
    expect(ipv4SpecialRange(parseIpv4('192.0.0.10/32')!)).toBeUndefined();
    expect(ipv4SpecialRange(parseIpv4('45.77.0.0/16')!)).toBeUndefined();
    expect(ipv4SpecialRange(parseIpv4('11.0.0.0/8')!)).toBeUndefined();
  });
});
