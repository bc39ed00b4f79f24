import type { LightMyRequestResponse } from 'fastify';

/** A request as given to `app.inject`, kept printable for reproductions. */
export interface ProbeRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** Sent as is (already JSON text, or deliberately not JSON). */
  payload?: string;
}

/**
 * Text that betrays internals when it appears in a response but was not in the request:
 * stack frames, database error wording, source paths.
 */
const LEAK_NEEDLES = [
  '    at ',
  'syntax error',
  'violates',
  'relation "',
  'duplicate key',
  'invalid input syntax',
  'invalid byte sequence',
  'unsupported Unicode escape',
  'stack depth limit',
  'node_modules',
  '/apps/server/',
  'file://',
  'Cannot read properties',
  'is not a function',
  'Maximum call stack',
];
const LEAK_PATTERNS = [/\(\/[^)\s]+:\d+:\d+\)/, /\/[\w.-]+\/[\w.-]+\.(?:ts|js|mjs):\d+/, /\b(?:SELECT|INSERT INTO|UPDATE|DELETE FROM)\s[\s\S]{0,80}\b(?:FROM|VALUES|SET|WHERE)\b/];

/**
 * Everything the project's error bar says about one response, as a list of violations
 * (empty when the response is acceptable):
 * never a 5xx; every 4xx is RFC 9457 problem+json with type, title, status and detail;
 * a 400 names the failing fields in `errors[].path`; no body leaks a stack trace, SQL or a path.
 */
export function responseViolations(req: ProbeRequest, res: LightMyRequestResponse): string[] {
  const out: string[] = [];
  const status = res.statusCode;
  if (status >= 500) out.push(`status ${status} (5xx)`);
  // Text the caller sent may be echoed back (decoded) without being a leak.
  const sent = `${req.url}\n${safeDecode(req.url)}\n${JSON.stringify(req.headers)}\n${req.payload ?? ''}`.toLowerCase();
  const text = res.body;
  for (const needle of LEAK_NEEDLES) {
    if (text.toLowerCase().includes(needle.toLowerCase()) && !sent.includes(needle.toLowerCase())) out.push(`body leaks ${JSON.stringify(needle)}`);
  }
  if (status >= 400) {
    for (const pattern of LEAK_PATTERNS) {
      const hit = pattern.exec(text);
      if (hit && !sent.includes(hit[0].toLowerCase())) out.push(`body leaks ${JSON.stringify(hit[0])}`);
    }
  }
  if (status >= 400 && status < 600) out.push(...problemViolations(res));
  return out;
}

/** The URL with each component decoded where it decodes (broken escapes stay as sent). */
function safeDecode(url: string): string {
  return url
    .split(/([/?&=])/)
    .map((part) => {
      try {
        return decodeURIComponent(part.replaceAll('+', ' '));
      } catch {
        return part;
      }
    })
    .join('');
}

function problemViolations(res: LightMyRequestResponse): string[] {
  const out: string[] = [];
  const type = String(res.headers['content-type'] ?? '');
  if (!type.startsWith('application/problem+json')) out.push(`content-type ${JSON.stringify(type)} is not application/problem+json`);
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(res.body) as Record<string, unknown>;
  } catch {
    return [...out, 'body is not JSON'];
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [...out, 'body is not a JSON object'];
  for (const field of ['type', 'title', 'detail'] as const) {
    if (typeof body[field] !== 'string' || body[field] === '') out.push(`problem.${field} missing or empty`);
  }
  if (body.status !== res.statusCode) out.push(`problem.status ${JSON.stringify(body.status)} differs from ${res.statusCode}`);
  if (res.statusCode === 400) {
    const errors = body.errors;
    if (!Array.isArray(errors) || errors.length === 0) out.push('400 without errors[]');
    else if (!errors.every((e: { path?: unknown; message?: unknown }) => typeof e?.path === 'string' && e.path !== '' && typeof e?.message === 'string')) {
      out.push('errors[] entry without a path or message');
    }
  }
  return out;
}

/** Paths named by a 400's `errors[]` (empty for anything else). */
export function errorPaths(res: LightMyRequestResponse): string[] {
  if (res.statusCode !== 400) return [];
  try {
    const errors = (JSON.parse(res.body) as { errors?: Array<{ path?: unknown }> }).errors ?? [];
    return errors.map((e) => String(e.path));
  } catch {
    return [];
  }
}

/** A reproduction that a report can quote: request and response, long parts cut. */
export function describeExchange(req: ProbeRequest, res: LightMyRequestResponse): string {
  const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…(${s.length} chars)` : s);
  const headers = { ...req.headers, ...(req.headers.authorization ? { authorization: '<key>' } : {}) };
  return [
    `${req.method} ${cut(req.url, 400)}`,
    `headers: ${JSON.stringify(headers)}`,
    ...(req.payload === undefined ? [] : [`body: ${cut(JSON.stringify(req.payload), 600)}`]),
    `-> ${res.statusCode} ${String(res.headers['content-type'] ?? '')} ${cut(res.body, 600)}`,
  ].join('\n');
}
