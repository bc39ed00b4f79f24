import { canonicalIpv4Cidr, canonicalIpv4CidrKey, compareIpv4, ipv4Key, type IndicatorKind } from '@rampart/contracts';

/**
 * What the engine needs to know of an indicator kind: its canonical spelling (the key of the
 * desired set; anything without one is refused and counted) and its list order (read-backs are
 * sorted by it, and it breaks score ties in the capacity cut). IPv4 is the kind every current
 * enforcer serves; a domain, URL or file digest enforcer supplies its own codec.
 */
export interface KindCodec {
  readonly kind: IndicatorKind;
  /** The canonical form of `raw`, or undefined when `raw` is not of this kind. */
  // Function-valued properties, not methods: they are passed around unbound (`sort(codec.compare)`).
  readonly canonical: (raw: string) => string | undefined;
  /** List order of two canonical values. */
  readonly compare: (a: string, b: string) => number;
  /**
   * Optional: a number whose order is `compare`'s, so that 100k-entry sorts compute one key per
   * value instead of comparing strings (about 20× faster for IPv4).
   */
  readonly key?: (canonical: string) => number;
  /** Optional, with `key`: `canonical`, also giving the value's key in `out.key`, from one parse. */
  readonly canonicalKey?: (raw: string, out: { key: number }) => string | undefined;
}

/** IPv4 addresses and networks as canonical CIDRs (`203.0.113.7/32`), in `sortCidrs` order. */
export const ipv4Codec: KindCodec = {
  kind: 'ipv4',
  canonical: canonicalIpv4Cidr,
  compare: compareIpv4,
  key: ipv4Key,
  canonicalKey: canonicalIpv4CidrKey,
};

/** Items sorted by the codec's order of `valueOf(item)` (a new array). */
export function sortByCodec<T>(codec: KindCodec, items: Iterable<T>, valueOf: (item: T) => string): T[] {
  if (!codec.key) return [...items].sort((a, b) => codec.compare(valueOf(a), valueOf(b)));
  const keyed: { item: T; key: number }[] = [];
  for (const item of items) keyed.push({ item, key: codec.key(valueOf(item)) });
  keyed.sort((a, b) => a.key - b.key);
  return keyed.map((k) => k.item);
}

/** Canonical values in the codec's order (a new array). */
export function sortValues(codec: KindCodec, values: Iterable<string>): string[] {
  return sortByCodec(codec, values, (v) => v);
}
