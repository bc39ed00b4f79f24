import { isIPv6 } from 'node:net';
import { isIpv4Address } from '@rampart/contracts';

/**
 * Canonical text of an address taken from a log line, or undefined when the text is not an
 * address. IPv4 octets lose leading zeros (`192.030.0.6` → `192.30.0.6`: read as decimal, the
 * way sshd and web servers print them); IPv4-mapped IPv6 (`::ffff:1.2.3.4`) becomes the IPv4
 * address; other IPv6 addresses take RFC 5952 form (lower case, longest zero run compressed).
 */
export function canonicalIp(text: string): string | undefined {
  if (text.length === 0 || text.length > 64) return undefined;
  if (text.charCodeAt(0) === 91 /* [ */ && text.endsWith(']')) text = text.slice(1, -1);
  const v4 = canonicalIpv4(text);
  if (v4 !== undefined) return v4;
  if (!text.includes(':')) return undefined;
  const mapped = /^::ffff:(?:0{1,4}:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(text);
  if (mapped) return canonicalIpv4(mapped[1]!);
  const zoneless = text.split('%')[0]!;
  if (!isIPv6(zoneless)) return undefined;
  // The URL parser applies RFC 5952 serialisation; IPv6 lines are rare, so its cost is fine.
  return new URL(`http://[${zoneless}]/`).hostname.slice(1, -1);
}

/**
 * The strict grammar (@rampart/contracts) after zero-padded octets of a log line are read as
 * decimal: a normaliser in front of the one IPv4 parser, not a second grammar.
 */
function canonicalIpv4(text: string): string | undefined {
  if (isIpv4Address(text)) return text;
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((part) => /^[0-9]{1,3}$/.test(part))) return undefined;
  const unpadded = parts.map((part) => String(Number(part))).join('.');
  return isIpv4Address(unpadded) ? unpadded : undefined;
}

/** True for an IPv4 or IPv6 address in any textual form `canonicalIp` accepts. */
export function isIpText(text: string): boolean {
  return canonicalIp(text) !== undefined;
}
