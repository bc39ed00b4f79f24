import ipaddr from 'ipaddr.js';
import { networkInterfaces } from 'node:os';
import { IPV4_SPECIAL_RANGES, parseIpv4, type Ipv4Net } from '@rampart/contracts';

/** Why an address may never be blocked. */
export type ProtectionReason = 'special_range' | 'own_address' | 'control_plane' | 'reserved_ip' | 'allow_list';

export interface ProtectedInput {
  /** The host's own addresses (default: every interface address). */
  ownAddresses: string[];
  /** Addresses the control plane resolves to. */
  controlPlane: string[];
  /** The organization's `reserved_ips`. */
  reservedIps: string[];
  /** The operator's allow-list (`local.allow_list`); IPv6 entries are kept for reports only. */
  allowList: string[];
}

interface Interval {
  start: number;
  end: number;
  reason: ProtectionReason;
}

/**
 * The IPv4 special-purpose ranges (private, loopback, link-local, CGNAT, multicast, documentation,
 * reserved, ...): the one table of `@rampart/contracts`, the same the server refuses reports of.
 */
export function specialRanges(): string[] {
  return IPV4_SPECIAL_RANGES.map((r) => r.cidr);
}

export function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a): a is NonNullable<typeof a> => Boolean(a))
    .map((a) => a.address);
}

/**
 * The never-block list: whatever the feed, a decision or a score says, an entry overlapping one
 * of these ranges is not enforced (a network entry that merely contains a protected address is
 * dropped whole: blocking 0.0.0.0/0 or the host's own /16 must be impossible).
 */
export class NeverBlock {
  private readonly starts: Float64Array;
  private readonly ends: Float64Array;
  private readonly reasons: ProtectionReason[];
  /** IPv6 addresses/networks protected from reporting (blocking is IPv4 only). */
  private readonly v6: [ipaddr.IPv6, number, ProtectionReason][] = [];

  constructor(input: ProtectedInput) {
    const intervals: Interval[] = [];
    const add = (texts: string[], reason: ProtectionReason) => {
      for (const text of texts) {
        const net = parseAny(text);
        if (net && 'start' in net) intervals.push({ start: net.start, end: net.end, reason });
        else if (net) this.v6.push([net.v6, net.prefix, reason]);
      }
    };
    add(specialRanges(), 'special_range');
    add(input.ownAddresses, 'own_address');
    add(input.controlPlane, 'control_plane');
    add(input.reservedIps, 'reserved_ip');
    add(input.allowList, 'allow_list');
    intervals.sort((a, b) => a.start - b.start || b.end - a.end);
    // Merge overlaps so a lookup is one binary search; the first range's reason is kept.
    const merged: Interval[] = [];
    for (const iv of intervals) {
      const last = merged.at(-1);
      if (last && iv.start <= last.end + 1) {
        if (iv.end > last.end) last.end = iv.end;
      } else merged.push({ ...iv });
    }
    this.starts = Float64Array.from(merged, (m) => m.start);
    this.ends = Float64Array.from(merged, (m) => m.end);
    this.reasons = merged.map((m) => m.reason);
  }

  get size(): number {
    return this.starts.length;
  }

  /** The reason the IPv4 range [start, end] overlaps the list, or undefined. */
  protectsRange(start: number, end: number): ProtectionReason | undefined {
    // Last interval starting at or before `end`; intervals are disjoint and sorted.
    let lo = 0;
    let hi = this.starts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.starts[mid]! <= end) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found >= 0 && this.ends[found]! >= start) return this.reasons[found];
    return undefined;
  }

  protectsNet(net: Ipv4Net): ProtectionReason | undefined {
    return this.protectsRange(net.start, net.end);
  }

  /** For any address text (IPv4, IPv4 CIDR or IPv6): protected, and why. Unparseable text is protected. */
  protects(text: string): ProtectionReason | undefined {
    const net = parseAny(text);
    if (!net) return 'special_range';
    if ('start' in net) return this.protectsNet(net);
    const v6 = net.v6;
    if (v6.range() !== 'unicast') return 'special_range';
    for (const [range, prefix, reason] of this.v6) if (v6.match(range, prefix)) return reason;
    return undefined;
  }
}

function parseAny(text: string): Ipv4Net | { v6: ipaddr.IPv6; prefix: number } | undefined {
  const v4 = parseIpv4(text);
  if (v4) return v4;
  try {
    if (text.includes('/')) {
      const [address, prefix] = ipaddr.parseCIDR(text);
      if (address.kind() === 'ipv6') {
        const v6 = address as ipaddr.IPv6;
        if (v6.isIPv4MappedAddress()) return parseIpv4(`${v6.toIPv4Address().toString()}/${Math.max(0, prefix - 96)}`);
        return { v6, prefix };
      }
      return undefined;
    }
    const address = ipaddr.parse(text);
    if (address.kind() === 'ipv6') {
      const v6 = address as ipaddr.IPv6;
      if (v6.isIPv4MappedAddress()) return parseIpv4(v6.toIPv4Address().toString());
      return { v6, prefix: 128 };
    }
  } catch {
    return undefined;
  }
  return undefined;
}
