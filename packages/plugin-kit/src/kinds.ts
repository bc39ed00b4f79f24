import { canonicalDigest, canonicalDomain, canonicalIpv4Cidr, canonicalUrl, compareIpv4, type IndicatorKind } from '@rampart/contracts';

export type { IndicatorKind };

/**
 * How one indicator kind is spelled and ordered everywhere an enforcer sees it. `canonical` is
 * the server's own form (@rampart/contracts: the IPv4 grammar and indicator-names.ts), so what the
 * agent hands an enforcer, what the enforcer reads back from its target and what the server
 * decided on compare as plain strings. `compare` is the order of every list an enforcer writes
 * and returns from `list()`.
 */
export interface KindCodec {
  readonly kind: IndicatorKind;
  /** The canonical form of `raw`, or undefined when `raw` is not an indicator of this kind. */
  // Function-valued properties, not methods: they are passed around unbound (`sort(codec.compare)`).
  readonly canonical: (raw: string) => string | undefined;
  readonly compare: (a: string, b: string) => number;
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** IPv4 address or network as a CIDR with host bits cleared (`203.0.113.7/32`); numeric order. */
export const ipv4Codec: KindCodec = { kind: 'ipv4', canonical: canonicalIpv4Cidr, compare: compareIpv4 };

/** Domain name, IDNA ASCII, lower-case, no trailing dot (`xn--bcher-kva.example`); code-unit order. */
export const domainCodec: KindCodec = { kind: 'domain', canonical: canonicalDomain, compare: byText };

/** http/https/ftp URL as WHATWG URL serializes it, without fragment; code-unit order. */
export const urlCodec: KindCodec = { kind: 'url', canonical: canonicalUrl, compare: byText };

/**
 * One file digest, MD5/SHA1/SHA256 in upper-case hex (the length names the algorithm). An
 * enforcer of files receives every digest a record carries as its own entry.
 */
export const fileCodec: KindCodec = { kind: 'file', canonical: canonicalDigest, compare: byText };

export const KIND_CODECS: Readonly<Record<IndicatorKind, KindCodec>> = { ipv4: ipv4Codec, domain: domainCodec, url: urlCodec, file: fileCodec };

/** Every kind, in the order the agent announces them. */
export const INDICATOR_KINDS: readonly IndicatorKind[] = ['ipv4', 'domain', 'url', 'file'];

export function codecOf(kind: IndicatorKind): KindCodec {
  return KIND_CODECS[kind];
}
