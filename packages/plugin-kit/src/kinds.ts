import { canonicalDigest, canonicalDomain, canonicalUrl, type IndicatorKind } from '@rampart/contracts';
import { ipv4Codec, type KindCodec } from './engine/codec.ts';

export type { IndicatorKind };

/**
 * The codec of each indicator kind (the engine's `KindCodec`): `canonical` is the server's own
 * form (@rampart/contracts: the IPv4 grammar and indicator-names.ts), so what the agent hands an
 * enforcer, what the enforcer reads back from its target and what the server decided on compare
 * as plain strings; `compare` is the order of every list an enforcer writes and returns from
 * `list()`.
 */
export { ipv4Codec, type KindCodec };

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

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
