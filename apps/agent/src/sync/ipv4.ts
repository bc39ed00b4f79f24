import ipaddr from 'ipaddr.js';

/*
 * IPv4 addresses and networks as numbers, so the agent can hold a million-entry block list in
 * typed arrays. Key = network address * 64 + prefix length: exact in a double, unique per CIDR,
 * and ordered by address then prefix (the order enforcers list in).
 */

export interface Ipv4Net {
  /** Network address, unsigned 32-bit. */
  start: number;
  /** Last address, unsigned 32-bit. */
  end: number;
  prefix: number;
}

function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** `a.b.c.d` or `a.b.c.d/n` (strict dotted decimal); host bits are cleared. Undefined if not IPv4. */
export function parseIpv4Net(text: string): Ipv4Net | undefined {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const prefixText = slash < 0 ? '32' : text.slice(slash + 1);
  if (!/^\d{1,2}$/.test(prefixText) || !ipaddr.IPv4.isValidFourPartDecimal(address)) return undefined;
  const prefix = Number(prefixText);
  if (prefix > 32) return undefined;
  const o = ipaddr.IPv4.parse(address).octets;
  const mask = maskOf(prefix);
  const start = (((o[0]! << 24) | (o[1]! << 16) | (o[2]! << 8) | o[3]!) & mask) >>> 0;
  return { start, end: (start | (~mask >>> 0)) >>> 0, prefix };
}

export function netKey(net: Pick<Ipv4Net, 'start' | 'prefix'>): number {
  return net.start * 64 + net.prefix;
}

export function keyNet(key: number): Ipv4Net {
  const prefix = key % 64;
  const start = (key - prefix) / 64;
  return { start, end: (start | (~maskOf(prefix) >>> 0)) >>> 0, prefix };
}

export function formatIpv4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
}

function pushDecimal(codes: number[], value: number): void {
  if (value >= 100) codes.push(48 + Math.floor(value / 100));
  if (value >= 10) codes.push(48 + (Math.floor(value / 10) % 10));
  codes.push(48 + (value % 10));
}

/**
 * Canonical CIDR of a key: `203.0.113.7/32`. Built from character codes so V8 makes one flat
 * string (a template literal makes a tree of string pieces, ~3x the memory, and block lists
 * hold a million of these at once).
 */
export function keyCidr(key: number): string {
  const prefix = key % 64;
  const ip = (key - prefix) / 64;
  const codes: number[] = [];
  pushDecimal(codes, ip >>> 24);
  codes.push(46);
  pushDecimal(codes, (ip >>> 16) & 255);
  codes.push(46);
  pushDecimal(codes, (ip >>> 8) & 255);
  codes.push(46);
  pushDecimal(codes, ip & 255);
  codes.push(47);
  pushDecimal(codes, prefix);
  return String.fromCharCode(...codes);
}

export function cidrKey(text: string): number | undefined {
  const net = parseIpv4Net(text);
  return net ? netKey(net) : undefined;
}
