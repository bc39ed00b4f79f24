import { createPinnedAgent, requestJson, type PinnedAgent, type TrustOptions } from '@rampart/plugin-kit';

/*
 * The transport of Infoblox NIOS WAPI: `<api>/<object>?<args>` over HTTPS with HTTP basic
 * authentication on every request. A read returns JSON (with `_return_as_object=1`, an object
 * `{ result, next_page_id? }`); a write through the `request` object takes a JSON array of
 * `{ method, object, data?, args? }` and returns one result per item. A refused call answers
 * HTTP 4xx/5xx with `{ Error, code, text }` (a 401 carries no JSON at all).
 */

export type Json = unknown;

/** A call WAPI refused: the HTTP status and WAPI's own `code` and `text`. */
export class InfobloxWapiError extends Error {
  readonly code = 'INFOBLOX_WAPI_FAILED';
  constructor(
    readonly call: string,
    readonly status: number,
    readonly wapiCode: string,
    readonly text: string,
  ) {
    super(`${call} failed (HTTP ${status}): ${wapiCode}: ${text.slice(0, 500)}`);
    this.name = 'InfobloxWapiError';
  }
}

/** The server's certificate did not match the pin, or did not verify against the CA. */
export class InfobloxTlsError extends Error {
  readonly code = 'INFOBLOX_TLS_FAILED';
  constructor(message: string) {
    super(message);
    this.name = 'InfobloxTlsError';
  }
}


export interface WapiOptions {
  /** The WAPI base URL, `https://gm.example/wapi/v2.12`. */
  api: string;
  username: string;
  password: string;
  trust: TrustOptions;
  /** Per-request limit; the caller's signal can end a request sooner. */
  timeoutMs: number;
}

export class WapiClient {
  readonly #agent: PinnedAgent;
  readonly #base: URL;
  readonly #auth: string;
  readonly #timeoutMs: number;

  constructor(o: WapiOptions) {
    this.#base = new URL(o.api.endsWith('/') ? o.api : `${o.api}/`);
    this.#auth = `Basic ${Buffer.from(`${o.username}:${o.password}`).toString('base64')}`;
    this.#timeoutMs = o.timeoutMs;
    this.#agent = createPinnedAgent(o.trust, (message) => new InfobloxTlsError(message));
  }

  /** GET `<object>?<args>`; resolves with the parsed JSON of a 200. */
  get(object: string, args: Record<string, string | number>, signal?: AbortSignal): Promise<Json> {
    return this.#call('GET', object, args, undefined, signal);
  }

  /** POST to `<object>` (the `request` object takes the multi-object array). */
  post(object: string, body: Json, signal?: AbortSignal): Promise<Json> {
    return this.#call('POST', object, {}, body, signal);
  }

  close(): void {
    this.#agent.destroy();
  }

  async #call(method: string, object: string, args: Record<string, string | number>, body: Json, signal?: AbortSignal): Promise<Json> {
    // './': an object type such as record:rpz:cname would otherwise parse as a URL scheme.
    const url = new URL(`./${object}`, this.#base);
    for (const [key, value] of Object.entries(args)) url.searchParams.set(key, String(value));
    const reply = await requestJson(this.#agent, url, { method, headers: { authorization: this.#auth }, body, timeoutMs: this.#timeoutMs, signal });
    if (reply.status >= 200 && reply.status < 300 && reply.json !== undefined) return reply.json;
    throw failure(`${method} ${object}`, reply.status, reply.json, reply.text);
  }
}

/** WAPI's `{ Error, code, text }`, or what a body without it says (a 401 is an HTML page). */
function failure(call: string, status: number, json: Json, text: string): InfobloxWapiError {
  const body = json && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
  if (body && typeof body.code === 'string') {
    const detail = typeof body.text === 'string' && body.text ? body.text : typeof body.Error === 'string' ? body.Error : 'no text';
    return new InfobloxWapiError(call, status, body.code, detail);
  }
  if (status === 401) return new InfobloxWapiError(call, status, 'Unauthorized', 'authorization failed: wrong username or password, or no API access');
  return new InfobloxWapiError(call, status, 'http_error', text.replace(/\s+/g, ' ').trim().slice(0, 300) || 'empty reply');
}
