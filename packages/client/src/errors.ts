import { ApiError, ERROR_CATALOG, PROBLEM_BASE, Problem, type ErrorCode } from '@rampart/contracts';

/** The error code of a problem body, or the catalog's code for the HTTP status when the body names none we know. */
function codeOf(status: number, problem: Problem | null): ErrorCode {
  if (problem?.type.startsWith(PROBLEM_BASE)) {
    const code = problem.type.slice(PROBLEM_BASE.length);
    if (Object.hasOwn(ERROR_CATALOG, code)) return code as ErrorCode;
  }
  const byStatus = (Object.keys(ERROR_CATALOG) as ErrorCode[]).find((c) => ERROR_CATALOG[c].status === status);
  if (byStatus) return byStatus;
  return status >= 500 ? 'internal' : 'bad_request';
}

export interface ResponseErrorInit {
  method: string;
  url: string;
  status: number;
  problem: Problem | null;
  retryAfterSeconds?: number | undefined;
}

/**
 * A non-2xx answer of the control plane. It is the contracts' ApiError (so `code` is from the one
 * error catalog) plus what the caller needs to react: the parsed problem, the request and, for
 * 429/503, how long the server asked us to wait.
 */
export class ClientApiError extends ApiError {
  readonly method: string;
  readonly url: string;
  readonly problem: Problem | null;
  readonly retryAfterSeconds: number | undefined;

  constructor(init: ResponseErrorInit) {
    const code = codeOf(init.status, init.problem);
    const options = init.problem?.errors ? { errors: init.problem.errors } : {};
    super(code, init.problem?.detail ?? `HTTP ${init.status}`, options);
    // The catalog maps a code to one status; keep the status the server really sent.
    Object.defineProperty(this, 'status', { value: init.status });
    this.name = 'ClientApiError';
    this.method = init.method;
    this.url = init.url;
    this.problem = init.problem;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

/** 402: the organization lacks service coins. Never retried: waiting does not add coins. */
export class InsufficientCoinsError extends ClientApiError {
  constructor(init: ResponseErrorInit) {
    super(init);
    this.name = 'InsufficientCoinsError';
  }
}

/** 429 whose Retry-After is longer than the client may wait (or retries ran out). */
export class RateLimitedError extends ClientApiError {
  constructor(init: ResponseErrorInit) {
    super(init);
    this.name = 'RateLimitedError';
  }
}

/** The server could not be reached (connection refused, reset, DNS, timeout) after every retry. */
export class NetworkError extends Error {
  readonly method: string;
  readonly url: string;
  constructor(method: string, url: string, cause: unknown) {
    super(`${method} ${url}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'NetworkError';
    this.method = method;
    this.url = url;
  }
}

/** A 2xx body that does not match its contract: a server of another version, or a proxy in the way. */
export class ResponseShapeError extends Error {
  readonly url: string;
  readonly issues: { path: string; message: string }[];
  constructor(url: string, issues: { path: string; message: string }[]) {
    super(`${url}: response does not match its contract (${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')})`);
    this.name = 'ResponseShapeError';
    this.url = url;
    this.issues = issues;
  }
}

/** Worth another attempt: the network failed or the server said so (5xx, 429). */
export function isRetryable(err: unknown): boolean {
  if (err instanceof NetworkError) return true;
  if (err instanceof InsufficientCoinsError) return false;
  if (err instanceof ClientApiError) return err.status === 429 || err.status >= 500;
  return false;
}
