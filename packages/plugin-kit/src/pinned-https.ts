import type https from 'node:https';
import type tls from 'node:tls';
import type { Duplex } from 'node:stream';

/*
 * HTTPS to a management API whose certificate is often self-signed (a firewall manager, a DNS
 * appliance): the operator pins the certificate's SHA-256 fingerprint or names a CA file.
 */

export interface TrustOptions {
  /** PEM of the CA (or of the self-signed certificate) that signs the server's certificate. */
  ca?: string;
  /** SHA-256 fingerprint of the server's certificate, `AA:BB:...` upper case (Node's form). */
  fingerprint256?: string;
}

/** What plugins hold: an `https.Agent` that checks the pin (see `createPinnedAgent`). */
export type PinnedAgent = https.Agent;

/*
 * node:https and node:tls (~7 MB of RSS once loaded) are loaded by the first pinned agent, not
 * with plugin-kit: most agents, and `rampart-agent parse`, never talk HTTPS to an appliance.
 */
const builtin = <ID extends 'node:https' | 'node:tls'>(id: ID) => process.getBuiltinModule(id);

type PinnedAgentClass = new (trust: TrustOptions, mismatch: (message: string) => Error) => https.Agent;
let pinnedAgentClass: PinnedAgentClass | undefined;

/**
 * Keeps connections open (one TLS handshake for thousands of calls) and checks the pin before a
 * connection is handed to a request, so that no byte of a request (each may carry a password) is
 * written to a server that does not hold the pinned certificate. With a pin and no CA the chain
 * is not verified (a self-signed certificate): the pin replaces it. Without either, the system's
 * CAs verify the server as usual; verification is never off. `mismatch` makes the plugin's own
 * error for a certificate that does not match the pin.
 */
export function createPinnedAgent(trust: TrustOptions, mismatch: (message: string) => Error): PinnedAgent {
  pinnedAgentClass ??= definePinnedAgent();
  return new pinnedAgentClass(trust, mismatch);
}

function definePinnedAgent(): PinnedAgentClass {
  class PinnedAgent extends builtin('node:https').Agent {
    readonly #trust: TrustOptions;
    readonly #mismatch: (message: string) => Error;

    constructor(trust: TrustOptions, mismatch: (message: string) => Error) {
      super({ keepAlive: true, maxSockets: 2 });
      this.#trust = trust;
      this.#mismatch = mismatch;
    }

    override createConnection(options: https.RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
      const { ca, fingerprint256 } = this.#trust;
      const socket = builtin('node:tls').connect({ ...(options as tls.ConnectionOptions), ...(ca ? { ca } : {}), rejectUnauthorized: Boolean(ca) || !fingerprint256 });
      const done = callback!;
      const onError = (err: Error) => done(err, socket);
      socket.once('error', onError);
      socket.once('secureConnect', () => {
        socket.removeListener('error', onError);
        const seen = socket.getPeerCertificate().fingerprint256;
        if (fingerprint256 && seen !== fingerprint256) {
          socket.destroy();
          done(this.#mismatch(`server certificate ${seen} does not match the pinned fingerprint`), socket);
          return;
        }
        done(null, socket);
      });
      return undefined;
    }
  }
  return PinnedAgent;
}

/** What a JSON management API answered: the status, the raw text, and the parsed JSON (undefined when the body is not JSON). */
export interface JsonReply {
  status: number;
  text: string;
  json: unknown;
}

/**
 * One HTTPS request over `agent` with an optional JSON body; resolves with whatever the server
 * answered (the caller maps a refusal to its own error). Ends after `timeoutMs`, or sooner when
 * `signal` aborts (rejecting with the signal's reason).
 */
export function requestJson(
  agent: https.Agent,
  url: URL,
  o: { method: string; headers?: Record<string, string>; body?: unknown; timeoutMs: number; signal?: AbortSignal | undefined },
): Promise<JsonReply> {
  o.signal?.throwIfAborted();
  const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
  const timeout = AbortSignal.timeout(o.timeoutMs);
  const signal = o.signal;
  return new Promise<JsonReply>((resolve, reject) => {
    const req = builtin('node:https').request(
      url,
      {
        method: o.method,
        agent,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        headers: {
          accept: 'application/json',
          ...o.headers,
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, text, json });
        });
      },
    );
    req.on('error', (err) => reject(signal?.aborted ? signal.reason : err));
    req.end(payload);
  });
}
