import type { z } from 'zod';
import { Problem } from '@rampart/contracts';
import { DEFAULT_BACKOFF, backoffDelay, parseRetryAfter, sleep, type BackoffOptions } from './backoff.ts';
import { ClientApiError, InsufficientCoinsError, NetworkError, RateLimitedError, ResponseShapeError, isRetryable } from './errors.ts';

export interface TransportOptions {
  /** Base address ending in `/api/v1`, e.g. `https://rampart.example.org/api/v1`. */
  baseUrl: string;
  /** The API key or agent token. */
  apiKey: string;
  /** Header that carries the key (the agent config's `auth_name`); default `Authorization`. */
  authName?: string;
  /** `bare` sends the key as is (what the original clients do); `bearer` prefixes `Bearer `. */
  authScheme?: 'bare' | 'bearer';
  /** Attempts after the first one for network errors, 5xx and 429; default 4. */
  retries?: number;
  backoff?: BackoffOptions;
  /** Longest Retry-After the client sleeps through before giving up with RateLimitedError; default 60 s. */
  maxRetryAfterSeconds?: number;
  /** Per-attempt timeout; default 30 s. */
  timeoutMs?: number;
  userAgent?: string;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
  /** Overrides the transport's retry count for this call (0 = one attempt). */
  retries?: number;
  signal?: AbortSignal;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  url: string;
}

interface Attempt {
  attempt: number;
  error: unknown;
}

/** Fetch with auth, timeouts, retries (jittered back-off, Retry-After) and problem+json errors. */
export class Transport {
  readonly options: Required<Omit<TransportOptions, 'userAgent'>> & { userAgent: string | undefined };

  constructor(options: TransportOptions) {
    this.options = {
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      apiKey: options.apiKey,
      authName: options.authName ?? 'Authorization',
      authScheme: options.authScheme ?? 'bare',
      retries: options.retries ?? 4,
      backoff: options.backoff ?? DEFAULT_BACKOFF,
      maxRetryAfterSeconds: options.maxRetryAfterSeconds ?? 60,
      timeoutMs: options.timeoutMs ?? 30_000,
      userAgent: options.userAgent,
    };
  }

  /** Headers that authenticate a request (also used for the WebSocket upgrade). */
  authHeaders(): Record<string, string> {
    const { authName, authScheme, apiKey } = this.options;
    return { [authName]: authScheme === 'bearer' ? `Bearer ${apiKey}` : apiKey };
  }

  url(path: string, query?: Query): string {
    const url = new URL(`${this.options.baseUrl}${path}`);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url.toString();
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<RawResponse> {
    const url = this.url(path, options.query);
    const retries = options.retries ?? this.options.retries;
    let last: Attempt | undefined;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (last) await sleep(this.waitBefore(last), options.signal);
      try {
        return await this.once(method, url, options);
      } catch (error) {
        if (!isRetryable(error) || options.signal?.aborted) throw error;
        if (error instanceof ClientApiError && error.status === 429) {
          const wait = error.retryAfterSeconds ?? 0;
          if (wait > this.options.maxRetryAfterSeconds) throw error;
        }
        last = { attempt, error };
      }
    }
    throw last?.error ?? new Error('unreachable');
  }

  private waitBefore(last: Attempt): number {
    const { error, attempt } = last;
    if (error instanceof ClientApiError && error.retryAfterSeconds !== undefined) return error.retryAfterSeconds * 1000;
    return backoffDelay(attempt, this.options.backoff);
  }

  private async once(method: string, url: string, options: RequestOptions): Promise<RawResponse> {
    const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.1', ...this.authHeaders(), ...options.headers };
    if (this.options.userAgent) headers['user-agent'] = this.options.userAgent;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, { method, headers, body, signal });
      text = await response.text();
    } catch (cause) {
      if (options.signal?.aborted) throw cause;
      throw new NetworkError(method, url, cause);
    }
    if (response.status >= 200 && response.status < 300) return { status: response.status, headers: response.headers, text, url };
    throw this.errorOf(method, url, response, text);
  }

  private errorOf(method: string, url: string, response: Response, text: string): ClientApiError {
    const init = {
      method,
      url,
      status: response.status,
      problem: parseProblem(text),
      retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after')),
    };
    if (response.status === 402) return new InsufficientCoinsError(init);
    if (response.status === 429) return new RateLimitedError(init);
    return new ClientApiError(init);
  }
}

function parseProblem(text: string): Problem | null {
  try {
    const parsed = Problem.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Parses a JSON body with its contract; a mismatch is a ResponseShapeError naming every failing path. */
export function parseJson<S extends z.ZodType>(schema: S, raw: RawResponse): z.infer<S> {
  let value: unknown;
  try {
    value = JSON.parse(raw.text);
  } catch {
    throw new ResponseShapeError(raw.url, [{ path: '', message: 'not JSON' }]);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new ResponseShapeError(
      raw.url,
      parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
    );
  }
  return parsed.data;
}
