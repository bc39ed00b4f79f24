import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalIpv4Cidr, canonicalIpv4CidrKey, compareIpv4, parseIpv4Address, ipv4Key, ipv4KeyCidr, ipv4KeyNet, ipv4ListForm, isIpv4, isIpv4Address, parseIpv4 } from './ipv4.ts';
import { Ipv4Address, Ipv4OrNetwork } from './primitives.ts';

const VALID: [string, string][] = [
  ['0.0.0.0', '0.0.0.0/32'],
  ['255.255.255.255', '255.255.255.255/32'],
  ['10.0.0.1', '10.0.0.1/32'],
  ['203.0.113.7/32', '203.0.113.7/32'],
  ['198.51.100.9/24', '198.51.100.0/24'],
  ['10.0.0.1/8', '10.0.0.0/8'],
  ['1.2.3.4/0', '0.0.0.0/0'],
  ['192.0.2.129/25', '192.0.2.128/25'],
  ['100.64.0.0/10', '100.64.0.0/10'],
];

const INVALID = [
  '',
  '010.0.0.1',
  '10.0.0.01',
  '10.00.0.1',
  '00.0.0.0',
  '10.0.0.1/08',
  '10.0.0.1/00',
  '10.0.0.1/033',
  '10.0.0.1/33',
  '10.0.0.1/',
  '10.0.0.1/-1',
  '10.0.0.1/+8',
  ' 10.0.0.1',
  '10.0.0.1 ',
  '10.0.0.1\r',
  '10.0.0.1/8\r',
  '10.0.0.1\n',
  '10.0.0 .1',
  '10.0.0.1 /8',
  '10.0.0.1/ 8',
  '\t10.0.0.1',
  '256.0.0.1',
  '1.2.3',
  '1.2.3.4.5',
  '1.2.3.',
  '.1.2.3',
  '1..2.3',
  '0x0a.0.0.1',
  '1.2.3.4/8/8',
  '１.2.3.4',
  '1.2.3.4:80',
  '::ffff:1.2.3.4',
  '[1.2.3.4]',
  '1000.2.3.4',
];

describe('ipv4 grammar', () => {
  it.each(VALID)('%j is the network %s', (text, canonical) => {
    expect(isIpv4(text)).toBe(true);
    expect(canonicalIpv4Cidr(text)).toBe(canonical);
    expect(ipv4KeyCidr(ipv4Key(text))).toBe(canonical);
    const out = { key: -2 };
    expect(canonicalIpv4CidrKey(text, out)).toBe(canonical);
    expect(out.key).toBe(ipv4Key(canonical));
  });

  it.each(INVALID)('%j is refused', (text) => {
    expect(ipv4Key(text)).toBe(-1);
    expect(parseIpv4(text)).toBeUndefined();
    expect(canonicalIpv4Cidr(text)).toBeUndefined();
    const out = { key: -2 };
    expect(canonicalIpv4CidrKey(text, out)).toBeUndefined();
    expect(out.key).toBe(-2);
    expect(isIpv4(text)).toBe(false);
  });

  it('tells an address from a network', () => {
    expect(parseIpv4Address('192.0.2.1')).toBe(0xc0000201);
    expect(parseIpv4Address('192.0.2.1/32')).toBeUndefined();
    expect(parseIpv4Address('192.0.02.1')).toBeUndefined();
    expect(isIpv4Address('203.0.113.7')).toBe(true);
    expect(isIpv4Address('203.0.113.7/32')).toBe(false);
    expect(isIpv4Address('010.0.0.1')).toBe(false);
  });

  it('gives the range of a network', () => {
    expect(parseIpv4('192.0.2.130/25')).toEqual({ start: 0xc0000280, end: 0xc00002ff, prefix: 25 });
    expect(parseIpv4('0.0.0.0/0')).toEqual({ start: 0, end: 0xffffffff, prefix: 0 });
    expect(parseIpv4('255.255.255.255')).toEqual({ start: 0xffffffff, end: 0xffffffff, prefix: 32 });
  });

  it('hands back an already canonical string itself', () => {
    const text = ['203.0.113', '7/32'].join('.');
    expect(canonicalIpv4Cidr(text)).toBe(text);
  });

  it('writes /32 bare in list form only', () => {
    expect(ipv4ListForm('203.0.113.7/32')).toBe('203.0.113.7');
    expect(ipv4ListForm('198.51.100.0/24')).toBe('198.51.100.0/24');
  });

  it('orders by address, then prefix, non-IPv4 last', () => {
    const sorted = ['10.0.0.0/9', 'junk', '9.255.255.255/32', '10.0.0.0/8', '2.0.0.0/8'].sort(compareIpv4);
    expect(sorted).toEqual(['2.0.0.0/8', '9.255.255.255/32', '10.0.0.0/8', '10.0.0.0/9', 'junk']);
  });
});

const octet = fc.integer({ min: 0, max: 255 });
const prefix = fc.integer({ min: 0, max: 32 });
const spelled = fc.tuple(octet, octet, octet, octet, fc.option(prefix)).map(([a, b, c, d, p]) => `${a}.${b}.${c}.${d}${p === null ? '' : `/${p}`}`);
/** Strings near the grammar: digits, dots, slashes, blanks, CR, zeros. */
const nearly = fc.array(fc.constantFrom('0', '1', '2', '5', '9', '.', '/', ' ', '\r', '3'), { maxLength: 20 }).map((cs) => cs.join(''));

describe('ipv4 properties', () => {
  it('canonical(parse(x)) round-trips, and canonical text is a fixed point', () => {
    fc.assert(
      fc.property(spelled, (text) => {
        const canonical = canonicalIpv4Cidr(text)!;
        expect(canonical).toBeDefined();
        expect(canonicalIpv4Cidr(canonical)).toBe(canonical);
        expect(parseIpv4(canonical)).toEqual(parseIpv4(text));
        const net = ipv4KeyNet(ipv4Key(text));
        expect(net.start % 2 ** (32 - net.prefix)).toBe(0);
      }),
    );
  });

  it('key order is address order, then prefix order', () => {
    fc.assert(
      fc.property(spelled, spelled, (a, b) => {
        const x = parseIpv4(a)!;
        const y = parseIpv4(b)!;
        expect(Math.sign(compareIpv4(a, b))).toBe(Math.sign(x.start - y.start || x.prefix - y.prefix));
      }),
    );
  });

  it('agrees with the zod schemas of the API on strings near the grammar', () => {
    fc.assert(
      fc.property(fc.oneof(nearly, spelled), (text) => {
        expect(isIpv4(text)).toBe(Ipv4OrNetwork.safeParse(text).success);
        expect(isIpv4Address(text)).toBe(Ipv4Address.safeParse(text).success);
      }),
      { numRuns: 2000 },
    );
  });
});
