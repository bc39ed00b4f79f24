import { z } from 'zod';

/** Problem `type` URIs are this base followed by the error code. */
export const PROBLEM_BASE = 'https://rampart.dev/problems/';

export const ERROR_CATALOG = {
  validation_failed: { status: 400, title: 'Validation failed' },
  bad_request: { status: 400, title: 'Bad request' },
  non_public_address: { status: 400, title: 'Not a public address' },
  network_too_wide: { status: 400, title: 'Network too wide' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  insufficient_coins: { status: 402, title: 'Not enough service coins' },
  forbidden: { status: 403, title: 'Forbidden' },
  reserved_ip: { status: 403, title: 'Reserved address' },
  not_found: { status: 404, title: 'Not found' },
  route_not_found: { status: 404, title: 'No such route' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  not_acceptable: { status: 406, title: 'Not acceptable' },
  request_timeout: { status: 408, title: 'Request timeout' },
  conflict: { status: 409, title: 'Conflict' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  rate_limited: { status: 429, title: 'Too many requests' },
  headers_too_large: { status: 431, title: 'Request header fields too large' },
  internal: { status: 500, title: 'Internal error' },
  bad_gateway: { status: 502, title: 'Bad gateway' },
  store_unavailable: { status: 503, title: 'Store unavailable' },
  upstream_timeout: { status: 504, title: 'Upstream timeout' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

export const ERROR_CODES = Object.keys(ERROR_CATALOG) as ErrorCode[];

export function problemType(code: ErrorCode): string {
  return `${PROBLEM_BASE}${code}`;
}

export const ProblemFieldError = z.object({
  path: z.string().describe('Where the value was found, e.g. body.tags.3'),
  message: z.string(),
});
export type ProblemFieldError = z.infer<typeof ProblemFieldError>;

/** Loose: extension members such as `balance` and `price` (402) are part of the problem. */
export const Problem = z
  .looseObject({
    type: z.url().describe(`${PROBLEM_BASE}<code>`),
    title: z.string(),
    status: z.int().min(400).max(599),
    detail: z.string(),
    instance: z.string().describe('Path of the request'),
    errors: z.array(ProblemFieldError).optional().describe('Every failing field of a validation failure'),
  })
  .meta({ description: 'RFC 9457 problem details; content type application/problem+json' });
export type Problem = z.infer<typeof Problem>;

export interface ApiErrorOptions {
  errors?: ProblemFieldError[];
  /** Extension members of the problem body (e.g. `balance`, `price`). */
  extra?: Record<string, unknown>;
}

/** The one error type services throw; the server's error handler turns it into a Problem. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly detail: string;
  readonly errors?: ProblemFieldError[];
  readonly extra?: Record<string, unknown>;

  constructor(code: ErrorCode, detail?: string, options: ApiErrorOptions = {}) {
    const entry = ERROR_CATALOG[code];
    super(detail ?? entry.title);
    this.name = 'ApiError';
    this.code = code;
    this.status = entry.status;
    this.detail = detail ?? entry.title;
    if (options.errors) this.errors = options.errors;
    if (options.extra) this.extra = options.extra;
  }
}
