import { isIpv4 } from '@rampart/contracts';

export type IndicatorKind = 'ipv4' | 'file' | 'domain' | 'url';

/**
 * What the operator pasted: an IPv4 address or network (the shared strict grammar), a digest,
 * a URL, else a domain. Text of only digits, dots and slashes that the grammar refuses
 * (`010.0.0.1`, `10.0.0.1/08`) is still looked up as IPv4, so the server's IPv4 validation
 * explains the problem instead of a domain-name error.
 */
export function kindOf(text: string): IndicatorKind {
  if (isIpv4(text) || /^[0-9./]+$/.test(text)) return 'ipv4';
  if (/^([0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64})$/i.test(text)) return 'file';
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return 'url';
  return 'domain';
}
