import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/** Writes raw bytes to the server and reads everything it answers until it closes the connection. */
function exchange(port: number, request: string, halfClose = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' }, () => (halfClose ? socket.end(request) : socket.write(request)));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

function firstResponse(raw: string) {
  const [head, ...rest] = raw.split('\r\n\r\n');
  const lines = head!.split('\r\n');
  const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const length = Number(headers['content-length']);
  return { status: Number(lines[0]!.split(' ')[1]), headers, body: JSON.parse(rest.join('\r\n\r\n').slice(0, length)) as Record<string, unknown> };
}

describe.each(driverCases().slice(0, 1))('errors raised before routing are problem+json over a real socket ($name)', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let port: number;
  let acme: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 1000 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('header overflow: 431 problem+json', async () => {
    const res = firstResponse(await exchange(port, `GET /api/v1/ips HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
    expect(res.status).toBe(431);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.body).toMatchObject({ type: 'https://rampart.dev/problems/headers_too_large', status: 431, title: 'Request header fields too large' });
  });

  it('no Host header: 400 problem+json naming headers.host (node answered an empty 400)', async () => {
    for (const path of ['/api/v1/ips', '/no/such/route', '/metrics']) {
      const res = firstResponse(await exchange(port, `GET ${path} HTTP/1.1\r\nConnection: close\r\nAuthorization: ${acme.keys.reader}\r\n\r\n`));
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toEqual({
        type: 'https://rampart.dev/problems/bad_request',
        title: 'Bad request',
        status: 400,
        detail: 'an HTTP/1.1 request needs a Host header',
        instance: path,
        errors: [{ path: 'headers.host', message: 'required' }],
      });
    }
    // HTTP/1.0 has no Host requirement: the request is served.
    const old = firstResponse(await exchange(port, `GET /api/v1/version HTTP/1.0\r\n\r\n`));
    expect(old.status).toBe(200);
  });

  it('bad chunking: 400 problem+json', async () => {
    const raw = await exchange(port, 'POST /api/v1/ips HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n');
    const res = firstResponse(raw);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.body).toMatchObject({ type: 'https://rampart.dev/problems/bad_request', status: 400, instance: '/api/v1/ips' });
    expect(raw).not.toContain('"error":"Bad Request"');
  });

  it('a Content-Length that is not a length: 400 problem+json', async () => {
    const res = firstResponse(await exchange(port, 'POST /api/v1/ips HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2x\r\n\r\n{}'));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.body).toMatchObject({ type: 'https://rampart.dev/problems/bad_request', status: 400 });
  });

  it('Content-Length and Transfer-Encoding together: 400 problem+json', async () => {
    const res = firstResponse(await exchange(port, 'POST /api/v1/ips HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json');
  });

  it('a body shorter than its Content-Length (the upload ends early): 400 problem+json', async () => {
    const raw = await exchange(port, `POST /api/v1/ips HTTP/1.1\r\nHost: x\r\nAuthorization: ${acme.keys.contributor}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"ip":`, true);
    const res = firstResponse(raw);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.body).toMatchObject({ type: 'https://rampart.dev/problems/bad_request', status: 400, detail: 'the request ended before its body was complete' });
  });

  it('garbage instead of a request line: 400 problem+json', async () => {
    const res = firstResponse(await exchange(port, '\x01\x02 nonsense\r\n\r\n'));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'https://rampart.dev/problems/bad_request', instance: '' });
  });
});
