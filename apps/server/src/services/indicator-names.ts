import { domainToASCII } from 'node:url';
import { ApiError } from '@rampart/contracts';

// One indicator is one row: a domain or URL is stored, looked up and decided on in a single
// canonical form, whatever spelling the caller used.

const MAX_DOMAIN = 253;
const MAX_URL = 2048;
const ASCII_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4_LIKE = /^[\d.]+$/;

function invalid(path: string, message: string): ApiError {
  return new ApiError('validation_failed', `${path}: ${message}`, { errors: [{ path, message }] });
}

/** The ASCII (IDNA/punycode) form of a host name, lower-case, without the trailing dot; undefined if not a domain. */
function asciiHost(name: string): string | undefined {
  const bare = name.endsWith('.') ? name.slice(0, -1) : name;
  const ascii = domainToASCII(bare);
  if (!ascii || ascii.length > MAX_DOMAIN || IPV4_LIKE.test(ascii)) return undefined;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((label) => ASCII_LABEL.test(label))) return undefined;
  return ascii;
}

/**
 * Canonical domain: IDNA to ASCII (UTS #46, as browsers do), lower-case, no trailing dot.
 * `Bücher.Example.` and `xn--bcher-kva.example` are the same indicator.
 */
export function normalizeDomain(input: string, path = 'body.domain'): string {
  const ascii = asciiHost(input.trim());
  if (!ascii) throw invalid(path, 'not a valid domain name');
  return ascii;
}

/**
 * Canonical URL (WHATWG URL): scheme and host lower-case, host in IDNA ASCII form without the
 * trailing dot, default port removed, path and query percent-encoded as browsers send them, the
 * fragment dropped (it never leaves the client).
 */
export function normalizeUrl(input: string, path = 'body.url'): string {
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    throw invalid(path, 'not a valid URL');
  }
  if (!['http:', 'https:', 'ftp:'].includes(url.protocol)) throw invalid(path, 'only http, https and ftp URLs are indicators');
  if (url.hostname.endsWith('.')) url.hostname = url.hostname.slice(0, -1);
  if (!url.hostname) throw invalid(path, 'the URL has no host');
  url.hash = '';
  const href = url.href;
  if (href.length > MAX_URL) throw invalid(path, `longer than ${MAX_URL} characters once normalized`);
  return href;
}
