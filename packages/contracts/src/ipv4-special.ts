/*
 * The IPv4 ranges that are not public unicast: the IANA IPv4 Special-Purpose Address Registry
 * (RFC 6890 and its updates) entries that are not globally reachable, plus multicast
 * (RFC 5771) and the limited broadcast address. Reports of these (or of networks overlapping
 * them) are refused: they would land in every other organization's `/ipv4` and `/flat`, which
 * firewalls apply as is (blocking 10.0.0.0/8 cuts a member off its own LAN).
 *
 * One table for the whole repository; `ipv4-special.test.ts` cross-checks it against ipaddr.js.
 * Registry entries that are globally reachable (192.0.0.9/32, 192.0.0.10/32 inside
 * 192.0.0.0/24; AS112 192.31.196.0/24 and 192.175.48.0/24; AMT 192.52.193.0/24) are public.
 */
import { ipv4Key, ipv4KeyNet, type Ipv4Net } from './ipv4.ts';

/** Why an address is not public, as named in the refusal (`10.0.0.0/8 (private)`). */
export type Ipv4SpecialClass =
  | 'unspecified'
  | 'this network'
  | 'private'
  | 'carrier-grade NAT'
  | 'loopback'
  | 'link-local'
  | 'IETF protocol assignments'
  | 'documentation'
  | '6to4 relay anycast'
  | 'benchmarking'
  | 'multicast'
  | 'reserved'
  | 'broadcast';

export interface Ipv4SpecialRange extends Ipv4Net {
  cidr: string;
  class: Ipv4SpecialClass;
}

/** Most specific first within an overlap (0.0.0.0/32 before 0.0.0.0/8, 255.255.255.255/32 before 240.0.0.0/4). */
const TABLE: ReadonlyArray<readonly [string, Ipv4SpecialClass]> = [
  ['0.0.0.0/32', 'unspecified'],
  ['0.0.0.0/8', 'this network'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade NAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', '6to4 relay anycast'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
];

/** Globally reachable exceptions inside a listed range (IANA "Globally Reachable: True"). */
const PUBLIC_EXCEPTIONS: readonly string[] = ['192.0.0.9/32', '192.0.0.10/32'];

function rangeOf(cidr: string): Ipv4Net {
  return ipv4KeyNet(ipv4Key(cidr));
}

export const IPV4_SPECIAL_RANGES: readonly Ipv4SpecialRange[] = TABLE.map(([cidr, cls]) => ({ cidr, class: cls, ...rangeOf(cidr) }));
const EXCEPTIONS: readonly Ipv4Net[] = PUBLIC_EXCEPTIONS.map(rangeOf);

/**
 * The first special-purpose range the network overlaps (the most specific one holding it, else
 * the first it touches), or undefined when every address in it is public unicast. A network
 * that lies wholly inside a public exception (192.0.0.9/32) is public.
 */
export function ipv4SpecialRange(net: Ipv4Net): Ipv4SpecialRange | undefined {
  if (EXCEPTIONS.some((e) => net.start >= e.start && net.end <= e.end)) return undefined;
  let touching: Ipv4SpecialRange | undefined;
  for (const range of IPV4_SPECIAL_RANGES) {
    if (net.start > range.end || net.end < range.start) continue;
    if (net.start >= range.start && net.end <= range.end) return range;
    touching ??= range;
  }
  return touching;
}

/** `10.0.0.0/8 (private)`: how a refusal names the range. */
export function describeIpv4Special(range: Ipv4SpecialRange): string {
  return `${range.cidr} (${range.class})`;
}
