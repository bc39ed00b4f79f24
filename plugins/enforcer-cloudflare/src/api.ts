import { abortable } from '@rampart/plugin-kit';

/*
 * A small Cloudflare API v4 client: authentication headers, the `{success, errors, result}`
 * envelope, and 429 handling (wait for Retry-After, bounded) — the rate limit is part of the
 * API's contract, so honouring it belongs to the client rather than to the agent's scheduler.
 */

export type CloudflareAuth = { token: string } | { email: string; key: string };

export interface CloudflareApiOptions {
  baseUrl: string;
  auth: CloudflareAuth;
  timeoutMs: number;
  max429Retries: number;
  /** Upper bound on one Retry-After wait. */
  maxRetryAfterMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

export class CloudflareApiError extends Error {
  readonly code = 'CLOUDFLARE_API_FAILED';
  constructor(
    readonly status: number,
    readonly errors: { code?: number; message?: string }[],
    readonly path: string,
  ) {
    super(`Cloudflare ${path}: HTTP ${status}: ${errors.map((e) => `${e.code ?? ''} ${e.message ?? ''}`.trim()).join('; ') || 'no detail'}`);
    this.name = 'CloudflareApiError';
  }
}

export interface Envelope<T> {
  success: boolean;
  errors?: { code?: number; message?: string }[];
  result: T;
  result_info?: { cursors?: { after?: string } };
}

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class CloudflareApi {
  constructor(private readonly o: CloudflareApiOptions) {}

  private headers(): Record<string, string> {
    const auth = this.o.auth;
    return {
      'content-type': 'application/json',
      ...('token' in auth ? { authorization: `Bearer ${auth.token}` } : { 'x-auth-email': auth.email, 'x-auth-key': auth.key }),
    };
  }

  /** Calls `path` (under the base URL); 404 resolves to undefined when `allow404`. */
  async call<T>(method: string, path: string, body?: unknown, allow404 = false, signal?: AbortSignal): Promise<Envelope<T> | undefined> {
    const sleep = this.o.sleep ?? defaultSleep;
    for (let attempt = 0; ; attempt++) {
      const timeout = AbortSignal.timeout(this.o.timeoutMs);
      const res = await fetch(`${this.o.baseUrl}${path}`, {
        method,
        headers: this.headers(),
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
      });
      if (res.status === 429 && attempt < this.o.max429Retries) {
        await res.arrayBuffer();
        const header = res.headers.get('retry-after');
        const seconds = header === null ? NaN : Number(header);
        const wait = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 1000 * 2 ** attempt;
        await abortable(sleep(Math.min(wait, this.o.maxRetryAfterMs ?? 60_000)), signal);
        continue;
      }
      if (res.status === 404 && allow404) {
        await res.arrayBuffer();
        return undefined;
      }
      const text = await res.text();
      let parsed: Envelope<T> | undefined;
      try {
        parsed = JSON.parse(text) as Envelope<T>;
      } catch {
        parsed = undefined;
      }
      if (!res.ok || !parsed?.success) {
        throw new CloudflareApiError(res.status, parsed?.errors ?? [{ message: text.slice(0, 200) }], path);
      }
      return parsed;
    }
  }

  async get<T>(path: string, signal?: AbortSignal): Promise<Envelope<T>> {
    return (await this.call<T>('GET', path, undefined, false, signal))!;
  }
}
