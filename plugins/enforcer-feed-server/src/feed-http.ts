import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PluginLogger } from '@rampart/plugin-kit';
import { FeedReader, type FeedVersion } from './feed-files.ts';

/*
 * The HTTPS endpoint devices pull from: GET or HEAD `/feeds/<name>.txt` with basic auth.
 * Answers, in order: 405 for another method; 401 (with WWW-Authenticate) without the right
 * user and password, whatever the path, so feed names do not leak; 404 for a name that is not a
 * configured feed; 503 while a feed has never been published (a device keeps its last good
 * copy on an error, which is right for an agent still starting); 304 when the device's ETag
 * (If-None-Match) or, without one, its If-Modified-Since still matches; else 200 and the body.
 */

export interface FetchRecord {
  at: string;
  client: string;
  user_agent: string;
  status: number;
}

export interface FeedHttpOptions {
  host: string;
  port: number;
  cert: string;
  key: string;
  username: string;
  password: string;
  dir: string;
  feeds: readonly string[];
  log: PluginLogger;
  now?: () => number;
}

export interface FeedHttpServer {
  port: number;
  /** Per feed: the last fetch by a client that authenticated, and the counts of 200 and 304. */
  fetches(): Record<string, { last?: FetchRecord; ok: number; not_modified: number }>;
  /** Requests refused for a wrong or missing user or password. */
  authFailures(): { count: number; last?: { at: string; client: string } };
  listening(): boolean;
  close(): Promise<void>;
}

const REALM = 'Basic realm="rampart feeds", charset="UTF-8"';
const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Compares in constant time (over digests, so lengths leak nothing either). */
function sameSecret(given: string, expected: Buffer): boolean {
  return timingSafeEqual(digest(given), expected);
}

function credentials(header: string | undefined): { user: string; password: string } | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!m) return undefined;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? undefined : { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

/** RFC 9110 §13.1.2: If-None-Match wins over If-Modified-Since; weak comparison for If-None-Match. */
export function notModified(req: Pick<IncomingMessage, 'headers'>, version: Pick<FeedVersion, 'etag' | 'modifiedSeconds'>): boolean {
  const inm = req.headers['if-none-match'];
  if (inm !== undefined) {
    const tags = inm.split(',').map((t) => t.trim().replace(/^W\//, ''));
    return tags.includes('*') || tags.includes(version.etag);
  }
  const ims = req.headers['if-modified-since'];
  if (ims === undefined) return false;
  const since = Date.parse(ims);
  return Number.isFinite(since) && version.modifiedSeconds * 1000 <= since;
}

type FeedCounts = { last?: FetchRecord; ok: number; not_modified: number };
type AuthFailures = { count: number; last?: { at: string; client: string } };

/** The request handler, over the counters it fills. */
function feedHandler(o: FeedHttpOptions, counts: Map<string, FeedCounts>, auth: AuthFailures) {
  const reader = new FeedReader(o.dir);
  const userDigest = digest(o.username);
  const passwordDigest = digest(o.password);
  const now = o.now ?? Date.now;
  const client = (req: IncomingMessage) => req.socket.remoteAddress ?? 'unknown';

  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const given = credentials(req.headers.authorization);
    // Both compared whatever the first gives, so the time taken says nothing of which was wrong.
    const userOk = sameSecret(given?.user ?? '', userDigest);
    const passwordOk = sameSecret(given?.password ?? '', passwordDigest);
    if (!given || !userOk || !passwordOk) {
      auth.count += 1;
      auth.last = { at: new Date(now()).toISOString(), client: client(req) };
      o.log.warn({ client: auth.last.client, supplied: given !== undefined }, 'feed request refused: wrong or missing credentials');
      res.writeHead(401, { 'www-authenticate': REALM, 'content-type': 'text/plain; charset=utf-8' }).end('authentication required\n');
      return;
    }
    const name = /^\/feeds\/([^/]+)\.txt$/.exec(new URL(req.url ?? '/', 'https://feeds').pathname)?.[1];
    const count = name === undefined ? undefined : counts.get(name);
    if (name === undefined || !count) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('no such feed\n');
      return;
    }
    const version = await reader.read(name);
    if (!version) {
      res.writeHead(503, { 'retry-after': '60', 'content-type': 'text/plain; charset=utf-8' }).end('feed not published yet\n');
      return;
    }
    const headers = {
      etag: version.etag,
      'last-modified': new Date(version.modifiedSeconds * 1000).toUTCString(),
      'cache-control': 'no-cache',
    };
    const fresh = !notModified(req, version);
    count.last = { at: new Date(now()).toISOString(), client: client(req), user_agent: String(req.headers['user-agent'] ?? ''), status: fresh ? 200 : 304 };
    if (!fresh) {
      count.not_modified += 1;
      res.writeHead(304, headers).end();
      return;
    }
    count.ok += 1;
    res.writeHead(200, { ...headers, 'content-type': 'text/plain; charset=utf-8', 'content-length': version.body.length });
    res.end(req.method === 'HEAD' ? undefined : version.body);
  };
}

export async function startFeedHttpServer(o: FeedHttpOptions): Promise<FeedHttpServer> {
  const counts = new Map(o.feeds.map((f): [string, FeedCounts] => [f, { ok: 0, not_modified: 0 }]));
  const auth: AuthFailures = { count: 0 };
  const handle = feedHandler(o, counts, auth);
  const server: Server = createServer({ cert: o.cert, key: o.key, minVersion: 'TLSv1.2' }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      o.log.error({ err, stage: 'serve' }, 'feed request failed');
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  // A device that opens a connection and says nothing must not hold it forever.
  server.headersTimeout = 30_000;
  server.requestTimeout = 60_000;
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  let closed = false;
  return {
    port: (server.address() as AddressInfo).port,
    fetches: () => Object.fromEntries([...counts].map(([name, c]) => [name, { ...c }])),
    authFailures: () => ({ ...auth }),
    listening: () => server.listening,
    async close() {
      if (closed) return;
      closed = true;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
