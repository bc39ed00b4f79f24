import { connect, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { testConfig } from '../src/config.ts';
import { openStore, type Store } from '../src/store/index.ts';
import { seedOrg, type TestOrg } from './support/app.ts';

/**
 * Log lines as the control plane writes them: every line is one JSON object, a request's lines
 * carry its `reqId` (the per-request child logger appends it to its bindings itself, app.ts), and
 * secrets are redacted wherever they sit in a logged object.
 */
describe('request logs', () => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  const raw: string[] = [];
  const lines = () => raw.join('').split('\n').filter((l) => l !== '');
  const records = () => lines().map((l) => JSON.parse(l) as Record<string, unknown>);

  beforeAll(async () => {
    store = await openStore({});
    const logStream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        raw.push(chunk.toString('utf8'));
        done();
      },
    });
    app = await buildApp({ config: testConfig({ authCacheSeconds: 0, logLevel: 'info' }), store, ipv4Mirror: null, logStream });
    app.get('/log-secrets', { config: { rampart: { auth: 'public' } } }, async (request) => {
      request.log.info(
        { settings: { password: 'hunter2', router_password: 'r0uter', cdn_waf_x_auth_key: 'cdn-key' }, aws: { secretAccessKey: 'aws-secret' }, config: { databaseUrl: 'postgres://u:pw@db/x' }, note: 'kept' },
        'settings saved',
      );
      return { ok: true };
    });
    app.get('/log-deep-secrets', { config: { rampart: { auth: 'public' } } }, async (request) => {
      const settings = { ips: { vault_x: { layer1: { layer2: { layer3: { password: 'deep-pass', hosts: [{ private_key: 'deep-key', name: 'h1' }] } } } } } };
      request.log.info({ settings }, 'deep settings saved');
      app.log.warn({ previous: { document: settings } }, 'deep settings replaced');
      return { ok: true };
    });
    app.get('/log-leaks', { config: { rampart: { auth: 'public' } } }, async (request) => {
      const failure = Object.assign(new Error('upstream said {"error":"denied","Password":"json-pass"}'), { config: { api_token: 'err-token' }, private_key_passphrase: 'err-phrase' });
      request.log.error({ err: failure, settings: { Password: 'case-pass', PASSWORD: 'shout-pass', apiToken: 'camel-token' }, body: '{"ssh_password":"str-pass"}', options: { headers: { Authorization: 'Bearer hdr-bearer', cookie: 'sid=hdr-cookie', 'x-api-key': 'hdr-apikey' } } }, 'upstream failed');
      return { ok: true };
    });
    app.get('/quiet', { config: { rampart: { auth: 'public' } }, logLevel: 'warn' }, async (request) => {
      request.log.info('not written');
      request.log.warn('written');
      return { ok: true };
    });
    await app.ready();
    acme = await seedOrg(store);
  });

  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('gives every line of one request the same reqId, and each request its own', async () => {
    raw.length = 0;
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/api/v1/me', headers: { authorization: acme.keys.reader } })).statusCode).toBe(200);
    const logged = records();
    const incoming = logged.filter((r) => r.msg === 'incoming request');
    const completed = logged.filter((r) => r.msg === 'request completed');
    expect(incoming.map((r) => (r.req as { url: string }).url)).toEqual(['/healthz', '/api/v1/me']);
    expect(completed).toHaveLength(2);
    for (const r of [...incoming, ...completed]) expect(r.reqId).toMatch(/^req-[0-9a-z]+$/);
    expect(completed.map((r) => r.reqId)).toEqual(incoming.map((r) => r.reqId));
    expect(incoming[0]!.reqId).not.toBe(incoming[1]!.reqId);
    // The binding appears once, in the place pino puts bindings (before the message's own fields).
    for (const line of lines()) expect(line.match(/"reqId":/g) ?? []).toHaveLength(1);
  });

  it('redacts a secret declared in the contracts five levels deep, in arrays too, from request and app loggers', async () => {
    raw.length = 0;
    expect((await app.inject({ method: 'GET', url: '/log-deep-secrets' })).statusCode).toBe(200);
    const text = raw.join('');
    for (const secret of ['deep-pass', 'deep-key']) expect(text).not.toContain(secret);
    const layer3 = { password: '[redacted]', hosts: [{ private_key: '[redacted]', name: 'h1' }] };
    const logged = records();
    expect(logged.find((r) => r.msg === 'deep settings saved')!.settings).toEqual({ ips: { vault_x: { layer1: { layer2: { layer3 } } } } });
    expect(logged.find((r) => r.msg === 'deep settings replaced')!.previous).toEqual({ document: { ips: { vault_x: { layer1: { layer2: { layer3 } } } } } });
  });

  it('redacts secrets logged through a request logger and keeps the rest', async () => {
    raw.length = 0;
    expect((await app.inject({ method: 'GET', url: '/log-secrets' })).statusCode).toBe(200);
    const text = raw.join('');
    for (const secret of ['hunter2', 'r0uter', 'cdn-key', 'aws-secret', 'u:pw@db']) expect(text).not.toContain(secret);
    const saved = records().find((r) => r.msg === 'settings saved')!;
    expect(saved.reqId).toMatch(/^req-/);
    expect(saved.settings).toEqual({ password: '[redacted]', router_password: '[redacted]', cdn_waf_x_auth_key: '[redacted]' });
    expect(saved.aws).toEqual({ secretAccessKey: '[redacted]' });
    expect(saved.config).toEqual({ databaseUrl: '[redacted]' });
    expect(saved.note).toBe('kept');
  });

  it('redacts the leaks of issue 34: other cases, Error properties, JSON inside strings, credential headers at any depth', async () => {
    raw.length = 0;
    expect((await app.inject({ method: 'GET', url: '/log-leaks' })).statusCode).toBe(200);
    const text = raw.join('');
    for (const leak of ['json-pass', 'err-token', 'err-phrase', 'case-pass', 'shout-pass', 'camel-token', 'str-pass', 'hdr-bearer', 'hdr-cookie', 'hdr-apikey']) expect([leak, text.includes(leak)]).toEqual([leak, false]);
    const line = records().find((r) => r.msg === 'upstream failed')!;
    expect(line.err).toMatchObject({ type: 'Error', message: 'upstream said {"error":"denied","Password":"[redacted]"}', config: { api_token: '[redacted]' }, private_key_passphrase: '[redacted]' });
    expect(line.body).toBe('{"ssh_password":"[redacted]"}');
    expect(line.options).toEqual({ headers: { Authorization: '[redacted]', cookie: '[redacted]', 'x-api-key': '[redacted]' } });
  });

  it('keeps a route-level log level, with the reqId', async () => {
    raw.length = 0;
    expect((await app.inject({ method: 'GET', url: '/quiet' })).statusCode).toBe(200);
    const logged = records();
    expect(logged.map((r) => r.msg)).toEqual(['written']);
    expect(logged[0]!.reqId).toMatch(/^req-/);
  });
});

describe('trace logs of malformed requests', () => {
  it('never carry the raw request bytes (a key sent with them)', async () => {
    const store = await openStore({});
    const raw: string[] = [];
    const logStream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        raw.push(chunk.toString('utf8'));
        done();
      },
    });
    const app = await buildApp({ config: testConfig({ logLevel: 'trace' }), store, ipv4Mirror: null, logStream });
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as AddressInfo;
      const secret = `rmp_0123456789ab_${'S'.repeat(43)}`;
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(`GET /api/v1/ips HTTP/1.1\r\nHost: x\r\nAuthorization: ${secret}\r\nBad Header Line\r\n\r\n`);
      const deadline = Date.now() + 10_000;
      let line: string | undefined;
      while (!line && Date.now() < deadline) {
        line = raw.join('').split('\n').find((l) => l.includes('"client error"'));
        if (!line) await new Promise((resolve) => setImmediate(resolve));
      }
      socket.destroy();
      expect(line).toBeDefined();
      const err = (JSON.parse(line!) as { err: Record<string, unknown> }).err;
      expect(err.code).toMatch(/^HPE_/);
      expect(err.rawPacket).toBe('[redacted]');
      const bytes = Buffer.from(secret).toJSON().data.join(',');
      expect(raw.join('')).not.toContain(secret);
      expect(raw.join('')).not.toContain(bytes);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
