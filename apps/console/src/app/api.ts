import type { z } from 'zod';
import { ClientApiError, NetworkError, RampartClient, parseJson } from '@rampart/client';

/** The console talks to the API of the origin it was served from, with the key of this tab. */
export class Api {
  readonly client: RampartClient;

  constructor(readonly key: string) {
    this.client = new RampartClient({ baseUrl: `${location.origin}/api/v1`, apiKey: key, retries: 1, timeoutMs: 20_000 });
  }

  async get<S extends z.ZodType>(path: string, schema: S, query?: Record<string, string | number | undefined>): Promise<z.infer<S>> {
    return parseJson(schema, await this.client.transport.request('GET', path, { ...(query ? { query } : {}) }));
  }

  async send<S extends z.ZodType>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body: unknown, schema?: S): Promise<z.infer<S> | undefined> {
    const raw = await this.client.transport.request(method, path, { ...(body === undefined ? {} : { body }), retries: 0 });
    if (!schema || raw.text === '') return undefined;
    return parseJson(schema, raw);
  }

  async text(path: string): Promise<string> {
    return (await this.client.transport.request('GET', path)).text;
  }
}

/** A readable message for any failure, and the per-field messages of a 400. */
export function describeError(err: unknown): { message: string; fields: Record<string, string> } {
  if (err instanceof ClientApiError) {
    const fields: Record<string, string> = {};
    // `body.ip` of POST and `params.ip` of PUT name the same field of a form.
    for (const e of err.errors ?? []) fields[e.path.replace(/^(body|params)\.?/, '')] = e.message;
    if (err.status >= 500) return { message: `The server failed (${err.status}: ${err.detail ?? err.code}). Try again in a moment.`, fields };
    return { message: `${err.status}: ${err.detail ?? err.code}`, fields };
  }
  if (err instanceof NetworkError) return { message: 'The server cannot be reached. Check the connection and try again.', fields: {} };
  return { message: err instanceof Error ? err.message : String(err), fields: {} };
}

/** Only a refused key ends a session; a failing or unreachable server does not. */
export const isUnauthorized = (err: unknown): boolean => err instanceof ClientApiError && err.status === 401;

export const KEY_STORAGE = 'rampart.console.key';
