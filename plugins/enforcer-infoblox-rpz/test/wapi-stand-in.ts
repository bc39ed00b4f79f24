import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';

/*
 * A stand-in of Infoblox NIOS WAPI (v2.x reference), enough for the RPZ enforcer: HTTPS with a
 * test certificate from openssl, HTTP basic authentication (a 401 page without JSON otherwise),
 * `zone_rp` look-ups, `record:rpz:cname` reads with `_paging=1` / `_max_results` /
 * `_return_as_object=1` and `next_page_id` cursors, and the `request` object whose array of
 * `{ method, object, data }` items runs as one transaction (all or nothing). Refusals are WAPI's
 * shape: HTTP 400 with `{ Error, code, text }`. A test, not a product.
 */

export interface StandInRecord {
  _ref: string;
  name: string;
  canonical: string;
  comment?: string;
  view: string;
  zone: string;
}

export interface Call {
  method: string;
  path: string;
  query: Record<string, string>;
  body?: unknown;
}

export interface WapiStandIn {
  api: string;
  port: number;
  fingerprint256: string;
  certPath: string;
  records: Map<string, StandInRecord>;
  calls: Call[];
  /** The next `request` call fails at this item index with this error (once). */
  failNextRequest?: { at: number; code: string; text: string };
  add(record: Omit<StandInRecord, '_ref'>): string;
  /** Names of the records of a zone/view, sorted, with their canonical: `name → canonical`. */
  rules(zone: string, view?: string): string[];
  stop(): Promise<void>;
}

export interface StandInOptions {
  user: string;
  password: string;
  version?: string;
  /** Response policy zones, as `view/zone` or `zone` (view `default`). */
  zones: string[];
}

function certificate(dir: string): { key: string; cert: string; certPath: string } {
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  // prettier-ignore
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', '/CN=gm.test',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ], { stdio: 'ignore' });
  return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8'), certPath };
}

class WapiFault extends Error {
  constructor(
    readonly status: number,
    readonly wapiCode: string,
    readonly text: string,
  ) {
    super(text);
  }
}

const fault = (code: string, text: string, status = 400) => new WapiFault(status, code, text);

export async function startWapiStandIn(o: StandInOptions): Promise<WapiStandIn> {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-wapi-'));
  const { key, cert, certPath } = certificate(dir);
  const version = o.version ?? 'v2.12';
  const zones = new Set(o.zones.map((z) => (z.includes('/') ? z : `default/${z}`)));
  const records = new Map<string, StandInRecord>();
  const cursors = new Map<string, { items: StandInRecord[]; fields: string[]; size: number }>();
  const calls: Call[] = [];
  let serial = 0;
  const auth = `Basic ${Buffer.from(`${o.user}:${o.password}`).toString('base64')}`;

  const newRef = (name: string, view: string) => `record:rpz:cname/ZG5zLmJpbmRfY25hbWUk${Buffer.from(String(++serial)).toString('base64url')}:${name}/${view}`;

  /** Validates and applies one create to `db`; returns the new ref. */
  const create = (db: Map<string, StandInRecord>, data: Record<string, unknown>): string => {
    const { name, rp_zone: zone, canonical, comment } = data as Record<string, string | undefined>;
    const view = (data.view as string | undefined) ?? 'default';
    if (typeof name !== 'string' || typeof zone !== 'string') throw fault('Client.Ibap.Proto', 'Field is not writable or required fields are missing: name, rp_zone');
    if (typeof canonical !== 'string') throw fault('Client.Ibap.Proto', 'Required field missing: canonical');
    if (!zones.has(`${view}/${zone}`)) throw fault('Client.Ibap.Data.NotFound', `Reference ${zone} not found in view ${view}`);
    if (!name.toLowerCase().endsWith(`.${zone.toLowerCase()}`)) throw fault('Client.Ibap.Data', `The record name ${name} is not in the zone ${zone}`);
    for (const r of db.values()) {
      if (r.view === view && r.name === name.toLowerCase())
        throw new WapiFault(400, 'Client.Ibap.Data.Conflict', `The record '${name}' already exists.`);
    }
    const ref = newRef(name.toLowerCase(), view);
    db.set(ref, { _ref: ref, name: name.toLowerCase(), canonical, view, zone, ...(comment !== undefined ? { comment } : {}) });
    return ref;
  };

  const project = (r: StandInRecord, fields: string[]) => {
    const out: Record<string, unknown> = { _ref: r._ref };
    for (const f of fields) if (f in r) out[f] = r[f as keyof StandInRecord];
    return out;
  };

  const page = (cursor: { items: StandInRecord[]; fields: string[]; size: number }) => {
    const items = cursor.items.splice(0, cursor.size);
    const result: Record<string, unknown> = { result: items.map((r) => project(r, cursor.fields)) };
    if (cursor.items.length > 0) {
      const id = `789c${Buffer.from(String(++serial)).toString('hex')}`;
      cursors.set(id, cursor);
      result.next_page_id = id;
    }
    return result;
  };

  const readRecords = (q: Record<string, string>): unknown => {
    if (q._page_id !== undefined) {
      const cursor = cursors.get(q._page_id);
      cursors.delete(q._page_id);
      if (!cursor) throw fault('Client.Ibap.Proto', 'Page id is invalid or expired');
      return page(cursor);
    }
    const view = q.view ?? 'default';
    const items = [...records.values()].filter((r) => r.view === view && (q.zone === undefined || r.zone === q.zone) && (q.name === undefined || r.name === q.name));
    const fields = q._return_fields ? q._return_fields.split(',') : ['name', 'view'];
    if (q._paging !== '1') {
      if (items.length > 1000) throw fault('Client.Ibap.Proto', 'Result set too large (> 1000)');
      return items.map((r) => project(r, fields));
    }
    if (q._return_as_object !== '1') throw fault('Client.Ibap.Proto', '_return_as_object needs to be enabled for paging requests.');
    const size = Number(q._max_results ?? 1000);
    return page({ items, fields, size });
  };

  /** The `request` object: every item applies to a copy, committed only when all succeed. */
  const multi = (body: unknown): unknown => {
    if (!Array.isArray(body)) throw fault('Client.Ibap.Proto', 'The request object expects an array of requests');
    const db = new Map(records);
    const results: unknown[] = [];
    body.forEach((item: Record<string, unknown>, i) => {
      const injected = state.failNextRequest;
      if (injected && injected.at === i) {
        state.failNextRequest = undefined;
        throw fault(injected.code, injected.text);
      }
      if (item.method === 'POST' && item.object === 'record:rpz:cname') results.push(create(db, (item.data ?? {}) as Record<string, unknown>));
      else if (item.method === 'DELETE' && typeof item.object === 'string') {
        if (!db.delete(item.object)) throw fault('Client.Ibap.Data.NotFound', `Reference ${item.object} not found`);
        results.push(item.object);
      } else throw fault('Client.Ibap.Proto', `Unsupported request item ${i}`);
    });
    records.clear();
    for (const [ref, r] of db) records.set(ref, r);
    return results;
  };

  const handle = (method: string, path: string, q: Record<string, string>, body: unknown): unknown => {
    if (method === 'GET' && path === 'zone_rp') {
      const view = q.view ?? 'default';
      return zones.has(`${view}/${q.fqdn}`) ? [{ _ref: `zone_rp/ZG5z:${q.fqdn}/${view}`, fqdn: q.fqdn, view }] : [];
    }
    if (method === 'GET' && path === 'record:rpz:cname') return readRecords(q);
    if (method === 'POST' && path === 'request') return multi(body);
    throw fault('Client.Ibap.Proto', `Unknown object type or method: ${method} ${path}`);
  };

  const server: Server = createServer({ key, cert }, (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'https://gm.test');
      const prefix = `/wapi/${version}/`;
      const path = url.pathname.startsWith(prefix) ? decodeURIComponent(url.pathname.slice(prefix.length)) : '';
      const query = Object.fromEntries(url.searchParams);
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? JSON.parse(text) : undefined;
      calls.push({ method: req.method ?? '', path, query, ...(body !== undefined ? { body } : {}) });
      if (req.headers.authorization !== auth) {
        res.writeHead(401, { 'content-type': 'text/html', 'www-authenticate': 'Basic realm="InfoBlox ONE Platform"' });
        res.end('<html><head><title>401 Authorization Required</title></head><body>Authorization Required</body></html>');
        return;
      }
      try {
        const reply = handle(req.method ?? '', path, query, body);
        res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(reply));
      } catch (err) {
        const f = err instanceof WapiFault ? err : fault('Server', String(err), 500);
        res.writeHead(f.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ Error: `AdmConProtoError: ${f.text}`, code: f.wapiCode, text: f.text }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const state: WapiStandIn = {
    api: `https://127.0.0.1:${port}/wapi/${version}`,
    port,
    fingerprint256: new X509Certificate(cert).fingerprint256,
    certPath,
    records,
    calls,
    add(record) {
      const ref = newRef(record.name, record.view);
      records.set(ref, { ...record, _ref: ref });
      return ref;
    },
    rules(zone, view = 'default') {
      return [...records.values()]
        .filter((r) => r.zone === zone && r.view === view)
        .map((r) => `${r.name} → ${JSON.stringify(r.canonical)}${r.comment ? ` (${r.comment})` : ''}`)
        .sort();
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return state;
}
