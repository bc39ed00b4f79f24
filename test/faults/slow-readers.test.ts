import { connect, type AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildApp, testConfig, seedOrg, driverCases } from '@rampart/server/testing';

/*
 * Slow readers of list responses (/flat, /ipv4, score lists): a reader that stops reading is cut
 * off LIST_SEND_TIMEOUT_SECONDS after its response started (here 1 s; stated bound: both stalled
 * streams ended within 20 s), and one key holds at most LIST_STREAMS_PER_KEY of them. The list is
 * an endless stream on a route configured as a list, so that only the timeout can end it, however
 * large the socket buffers of the machine are; /flat itself shares the per-key cap (checked here).
 */
describe('slow readers of list responses', () => {
  it('cut off a reader that stops reading, and cap the lists one key has in flight (429)', async () => {
    // PostgreSQL when DATABASE_URL is set (it opens faster), else the embedded store.
    const store = await driverCases().at(-1)!.open();
    const app = await buildApp({ config: testConfig({ authCacheSeconds: 0, listStreamsPerKey: 2, listSendTimeoutSeconds: 1 }), store, ipv4Mirror: null });
    // A list without end: only the send timeout can finish it.
    const ended: string[] = [];
    app.get('/endless-list', { config: { rampart: { coin: 'list' } } }, async (request, reply) => {
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const stream = new Readable({ read() { this.push(chunk); } });
      stream.on('close', () => ended.push(request.id));
      return reply.type('text/plain').send(stream);
    });
    const org = await seedOrg(store);
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as AddressInfo;
      const slowReader = () => {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => undefined);
        const state = { head: '' };
        socket.once('data', (data: Buffer) => {
          state.head = data.toString('latin1', 0, 200);
          socket.pause();
        });
        socket.write(`GET /endless-list HTTP/1.1\r\nHost: x\r\nAuthorization: ${org.keys.reader}\r\n\r\n`);
        return { socket, state };
      };
      const until = async (what: string, done: () => boolean | Promise<boolean>) => {
        const deadline = Date.now() + 20_000;
        while (!(await done())) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      const startedAt = Date.now();
      const a = slowReader();
      const b = slowReader();
      await until('two streams under way', () => a.state.head !== '' && b.state.head !== '');
      expect(a.state.head).toMatch(/^HTTP\/1.1 200/);
      const third = await app.inject({ url: '/api/v1/flat/500', headers: { authorization: org.keys.reader } });
      expect(third.statusCode).toBe(429);
      expect(third.json()).toMatchObject({ type: 'https://rampart.dev/problems/rate_limited' });
      expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
      // Another key is not held back by this one's streams.
      expect((await app.inject({ url: '/api/v1/flat/500', headers: { authorization: org.keys.contributor } })).statusCode).toBe(200);
      // Neither reader reads: the server closes both connections, which ends their streams.
      await until('the stalled responses to be cut off', () => ended.length === 2);
      console.info(`fault figures (slow readers): 2 stalled list streams cut off ${Date.now() - startedAt} ms after they started (LIST_SEND_TIMEOUT_SECONDS=1)`);
      a.socket.destroy();
      b.socket.destroy();
      await until('the key to list again', async () => (await app.inject({ url: '/api/v1/flat/500', headers: { authorization: org.keys.reader } })).statusCode === 200);
    } finally {
      await app.close();
      await store.close();
    }
  }, 60_000);
});
