import { createPinnedAgent, requestJson, type PinnedAgent, type TrustOptions } from '@rampart/plugin-kit';

/*
 * The transport of the Check Point Management Web API: every command is
 * `POST https://<server>/web_api/<command>` with a JSON body; after `login` the session id
 * travels as the `X-chkp-sid` header. Failures come back as HTTP 4xx/5xx with a JSON body
 * `{ code, message }` (and `errors`/`warnings` arrays for validation failures).
 */

export type ApiBody = Record<string, unknown>;

/** A command the server refused: its HTTP status and the API's own `code` and `message`. */
export class CheckPointApiError extends Error {
  readonly code = 'CHECKPOINT_API_FAILED';
  constructor(
    readonly command: string,
    readonly status: number,
    readonly apiCode: string,
    readonly detail: string,
  ) {
    super(`${command} failed (HTTP ${status}): ${apiCode}: ${detail.slice(0, 500)}`);
    this.name = 'CheckPointApiError';
  }
}

/** The server's certificate did not match the pin, or did not verify against the CA. */
export class CheckPointTlsError extends Error {
  readonly code = 'CHECKPOINT_TLS_FAILED';
  constructor(message: string) {
    super(message);
    this.name = 'CheckPointTlsError';
  }
}


export interface TransportOptions {
  host: string;
  port: number;
  trust: TrustOptions;
  /** Per-request limit; the caller's signal can end a request sooner. */
  timeoutMs: number;
}

export class WebApiTransport {
  readonly #agent: PinnedAgent;
  readonly #o: TransportOptions;

  constructor(o: TransportOptions) {
    this.#o = o;
    this.#agent = createPinnedAgent(o.trust, (message) => new CheckPointTlsError(message));
  }

  /** Runs one command; resolves with the JSON reply of a 200, rejects with the API's error. */
  async post(command: string, body: ApiBody, sid: string | undefined, signal?: AbortSignal): Promise<ApiBody> {
    const host = this.#o.host.includes(':') ? `[${this.#o.host}]` : this.#o.host;
    const url = new URL(`https://${host}:${this.#o.port}/web_api/${command}`);
    const reply = await requestJson(this.#agent, url, { method: 'POST', headers: sid ? { 'x-chkp-sid': sid } : {}, body, timeoutMs: this.#o.timeoutMs, signal });
    const json = reply.json && typeof reply.json === 'object' && !Array.isArray(reply.json) ? (reply.json as ApiBody) : undefined;
    if (reply.status === 200 && json) return json;
    const code = typeof json?.code === 'string' ? json.code : 'http_error';
    throw new CheckPointApiError(command, reply.status, code, describeFailure(json, reply.text));
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** The message, followed by the messages of `errors` (validation failures list them there). */
function describeFailure(json: ApiBody | undefined, text: string): string {
  if (!json) return text.slice(0, 300) || 'empty reply';
  const parts = [typeof json.message === 'string' ? json.message : ''];
  for (const key of ['errors', 'blocking-errors'] as const) {
    const list = json[key];
    if (Array.isArray(list)) for (const item of list) if (item && typeof item.message === 'string') parts.push(item.message);
  }
  return parts.filter(Boolean).join('; ') || 'no message';
}
