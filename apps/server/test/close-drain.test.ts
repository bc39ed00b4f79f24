import { request, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { testConfig } from '../src/config.ts';
import { openStore } from '../src/store/index.ts';

/*
 * A replica that closes while a keep-alive request is still running: the answer says
 * `Connection: close`, the server ends that connection and `app.close()` returns, instead of
 * waiting out the 65 s keep-alive timeout with the connection idle (found by the agent reconnect
 * e2e test: the control plane stayed down 66 s after a graceful restart). The test's own timeout
 * (20 s, well under 65 s) is what fails on the old code.
 */
describe('closing with a keep-alive request in flight', () => {
  it('answers it with Connection: close, ends the connection and finishes closing', { timeout: 20_000 }, async () => {
    const store = await openStore({});
    const app = await buildApp({ config: testConfig({ authCacheSeconds: 0 }), store });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let arrived!: () => void;
    const inFlight = new Promise<void>((r) => (arrived = r));
    app.get('/held', { config: { rampart: { auth: 'public' } } }, async () => {
      arrived();
      await held;
      return { ok: true };
    });
    // Runs after the close-drain plugin's own preClose hook (hooks run in the order added).
    let closeBegan!: () => void;
    const closing = new Promise<void>((r) => (closeBegan = r));
    app.addHook('preClose', async () => closeBegan());
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const agent = new Agent({ keepAlive: true });
    try {
      const answer = new Promise<{ status: number; connection: string | undefined; body: string; socketClosed: Promise<void> }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/held', agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body, socketClosed }));
        });
        const socketClosed = new Promise<void>((r) => req.on('socket', (s) => s.once('close', () => r())));
        req.on('error', reject);
        req.end();
      });
      await inFlight;
      const closed = app.close();
      // Close has begun (preClose ran) before the answer is released.
      await closing;
      release();
      const got = await answer;
      expect(got).toMatchObject({ status: 200, connection: 'close', body: '{"ok":true}' });
      await got.socketClosed;
      await closed;
      expect(app.server.listening).toBe(false);
    } finally {
      agent.destroy();
      await store.close();
    }
  });

  it('serves a request that arrives on an idle kept-alive connection once closing has begun, with Connection: close', { timeout: 20_000 }, async () => {
    const store = await openStore({});
    const app = await buildApp({ config: testConfig({ authCacheSeconds: 0 }), store });
    app.get('/ping', { config: { rampart: { auth: 'public' } } }, async () => ({ ok: true }));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status: number; connection: string | undefined; retryAfter: string | undefined; body: string }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: (app.server.address() as AddressInfo).port, path: '/ping', agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, retryAfter: res.headers['retry-after'], body }));
        });
        req.on('error', reject);
        req.end();
      });
    // Closing has begun (fastify's and close-drain's flags are set) but the server still listens:
    // a balancer's kept-alive connection sends its next request now.
    let during: Awaited<ReturnType<typeof get>> | undefined;
    app.addHook('preClose', async () => {
      during = await get();
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      expect((await get()).status).toBe(200);
      await app.close();
      // fastify's default was a bare 503 without Retry-After.
      expect(during).toEqual({ status: 200, connection: 'close', retryAfter: undefined, body: '{"ok":true}' });
    } finally {
      agent.destroy();
      await store.close();
    }
  });
});
