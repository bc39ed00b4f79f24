import { ApiError, canonicalDomain, parseIndicatorUrl } from '@rampart/contracts';

// One indicator is one row: a domain or URL is stored, looked up and decided on in a single
// canonical form, whatever spelling the caller used. The forms are @rampart/contracts'
// (indicator-names.ts), shared with the agent and its enforcers; here they become 400s.

function invalid(path: string, message: string): ApiError {
  return new ApiError('validation_failed', `${path}: ${message}`, { errors: [{ path, message }] });
}

/** Canonical domain (`canonicalDomain`), or a 400 naming `path`. */
export function normalizeDomain(input: string, path = 'body.domain'): string {
  const ascii = canonicalDomain(input);
  if (!ascii) throw invalid(path, 'not a valid domain name');
  return ascii;
}

/** Canonical URL (`parseIndicatorUrl`), or a 400 naming `path` and the reason. */
export function normalizeUrl(input: string, path = 'body.url'): string {
  const parsed = parseIndicatorUrl(input);
  if ('problem' in parsed) throw invalid(path, parsed.problem);
  return parsed.url;
}
