/*
 * The one canonical form of each named indicator kind. The server stores, looks up and decides
 * on a domain, URL or digest only in this form (its routes turn `undefined` into a 400 naming the
 * field); the agent and its enforcers compare what they receive in the same form
 * (plugin-kit's kinds.ts). Browser-safe: WHATWG URL only, no `node:` modules (the console bundles
 * this package).
 */

export const MAX_DOMAIN_LENGTH = 253;
export const MAX_URL_LENGTH = 2048;
const ASCII_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4_LIKE = /^[\d.]+$/;
// What a host name cannot hold but the URL parser would read as something else (port, path,
// credentials, query) or silently drop (tabs, newlines).
const NOT_IN_HOST = /[\s/\\:?#@[\]%]/;

/** IDNA (UTS #46) to ASCII as browsers do, or '' when the name is not a valid host. */
function domainToAscii(name: string): string {
  if (name === '' || NOT_IN_HOST.test(name)) return '';
  try {
    return new URL(`http://${name}/`).hostname;
  } catch {
    return '';
  }
}

/**
 * Canonical domain: IDNA to ASCII (UTS #46), lower-case, without the trailing dot, at least two
 * labels, not an IPv4 address. `Bücher.Example.` and `xn--bcher-kva.example` are the same
 * indicator. Undefined when `input` is not a domain name.
 */
export function canonicalDomain(input: string): string | undefined {
  const trimmed = input.trim();
  const bare = trimmed.endsWith('.') ? trimmed.slice(0, -1) : trimmed;
  const ascii = domainToAscii(bare);
  if (!ascii || ascii.length > MAX_DOMAIN_LENGTH || IPV4_LIKE.test(ascii)) return undefined;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((label) => ASCII_LABEL.test(label))) return undefined;
  return ascii;
}

export type UrlProblem = 'not a valid URL' | 'only http, https and ftp URLs are indicators' | 'the URL has no host' | `longer than ${number} characters once normalized`;

/**
 * Canonical URL (WHATWG URL): scheme and host lower-case, host in IDNA ASCII form without the
 * trailing dot, default port removed, path and query percent-encoded as browsers send them, the
 * fragment dropped (it never leaves the client). `{ problem }` says why `input` is not a URL
 * indicator.
 */
export function parseIndicatorUrl(input: string): { url: string } | { problem: UrlProblem } {
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    return { problem: 'not a valid URL' };
  }
  if (!['http:', 'https:', 'ftp:'].includes(url.protocol)) return { problem: 'only http, https and ftp URLs are indicators' };
  if (url.hostname.endsWith('.')) url.hostname = url.hostname.slice(0, -1);
  if (!url.hostname) return { problem: 'the URL has no host' };
  url.hash = '';
  const href = url.href;
  if (href.length > MAX_URL_LENGTH) return { problem: `longer than ${MAX_URL_LENGTH} characters once normalized` };
  return { url: href };
}

/** The canonical URL (see `parseIndicatorUrl`), or undefined when `input` is not a URL indicator. */
export function canonicalUrl(input: string): string | undefined {
  const parsed = parseIndicatorUrl(input);
  return 'url' in parsed ? parsed.url : undefined;
}

const DIGEST = /^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/;

/**
 * Canonical file digest: MD5, SHA1 or SHA256 in upper-case hex, as file records carry them and
 * `PUT /files/{digest}` stores them. The length names the algorithm (32, 40, 64 digits).
 */
export function canonicalDigest(input: string): string | undefined {
  const trimmed = input.trim();
  return DIGEST.test(trimmed) ? trimmed.toUpperCase() : undefined;
}

/** The algorithm of a canonical digest, by its length. */
export function digestAlgorithm(digest: string): 'md5' | 'sha1' | 'sha256' | undefined {
  return digest.length === 32 ? 'md5' : digest.length === 40 ? 'sha1' : digest.length === 64 ? 'sha256' : undefined;
}
