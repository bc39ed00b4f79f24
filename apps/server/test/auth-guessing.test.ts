import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { createApiKey, createUser } from '../src/services/operators/admin.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/*
 * Guessing API key ids from many addresses: each address stays under its own failure budget
 * (AUTH_FAILURES_PER_ADDRESS), so only budgets across addresses can stop it. Real sockets, each
 * from its own loopback address (127.0.x.y), against a listening server.
 */

interface Answer {
  status: number;
  retryAfter: string | undefined;
  type: string | undefined;
}

function get(port: number, localAddress: string, authorization: string, path = '/api/v1/ips?ts=0'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, localAddress, headers: { authorization, connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () =>
        resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], type: res.statusCode! >= 400 ? (JSON.parse(body) as { type: string }).type : undefined }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const guess = () => `rmp_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url').slice(0, 43)}`;

/** One counter's value in /metrics text (0 when absent). */
function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : 0;
}

describe.each(driverCases())('guessing key ids from rotating addresses on $name', (driver) => {
  let store: Store;
  let org: TestOrg;
  const apps: FastifyInstance[] = [];
  beforeAll(async () => {
    store = await driver.open();
    org = await seedOrg(store, { name: 'Guessed' });
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await store.close();
  });

  async function listening(overrides: Parameters<typeof testApp>[1]): Promise<{ app: FastifyInstance; port: number }> {
    const app = await testApp(store, { rateLimitPerMinute: 1_000_000, ...overrides });
    apps.push(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    return { app, port: (app.server.address() as { port: number }).port };
  }
  const lookups = async (app: FastifyInstance) => metric((await app.inject('/metrics')).body, 'rampart_auth_key_lookups_total');

  it('900 guesses from 100 addresses in 100 networks (9 each): the budget of all addresses, then 429 with Retry-After; known keys pass', async () => {
    const { app, port } = await listening({ authUnknownKeysPerMinute: 50, authUnknownKeysPerNetwork: 1000 });
    // A key verified before the guessing: known good, from anywhere.
    expect((await get(port, '127.0.200.1', org.keys.reader)).status).toBe(200);
    const user = await createUser(store, { orgGid: org.org.gid, username: 'not-read-yet@example.org', role: ROLE.reader });
    const fresh = await createApiKey(store, { username: user.username });
    const before = await lookups(app);
    const answers: Answer[] = [];
    for (let round = 0; round < 9; round += 1) for (let x = 0; x < 100; x += 1) answers.push(await get(port, `127.0.${x}.${round + 1}`, guess()));
    const statuses = answers.map((a) => a.status);
    expect(statuses.slice(0, 50)).toEqual(Array<number>(50).fill(401));
    expect(statuses.slice(50)).toEqual(Array<number>(850).fill(429));
    for (const a of answers.slice(50)) {
      expect(a.type).toBe('https://rampart.dev/problems/rate_limited');
      expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(a.retryAfter)).toBeLessThanOrEqual(60);
    }
    // Each refused guess cost no store look-up.
    expect((await lookups(app)) - before).toBe(50);
    // Known good keys pass as before, from the guessing addresses too; a key id the replica has
    // not read waits like an unknown one until the minute is over.
    expect((await get(port, '127.0.7.1', org.keys.reader)).status).toBe(200);
    expect((await get(port, '127.0.201.1', org.keys.reader)).status).toBe(200);
    expect((await get(port, '127.0.202.1', fresh.key)).status).toBe(429);
    const text = (await app.inject('/metrics')).body;
    expect(metric(text, 'rampart_auth_locked_out_requests_total{subject="all"}')).toBe(851);
  });

  it('guesses from 100 addresses of one /24: its budget, then 429; other networks still get their answers', async () => {
    const { app, port } = await listening({ authUnknownKeysPerMinute: 10_000, authUnknownKeysPerNetwork: 20 });
    expect((await get(port, '127.0.9.1', org.keys.reader)).status).toBe(200);
    const statuses: number[] = [];
    for (let y = 1; y <= 100; y += 1) statuses.push((await get(port, `127.0.5.${y}`, guess())).status);
    expect(statuses).toEqual([...Array<number>(20).fill(401), ...Array<number>(80).fill(429)]);
    expect((await get(port, '127.0.6.1', guess())).status).toBe(401);
    // A key this replica knows good passes from the spent network; one it never read waits.
    expect((await get(port, '127.0.5.200', org.keys.reader)).status).toBe(200);
    expect((await get(port, '127.0.5.201', org.keys.admin)).status).toBe(429);
    expect(metric((await app.inject('/metrics')).body, 'rampart_auth_locked_out_requests_total{subject="network"}')).toBe(81);
  });

  it('an unknown key id costs one store look-up, however many addresses try it again', async () => {
    const { app, port } = await listening({});
    const id = guess();
    const before = await lookups(app);
    const statuses: number[] = [];
    for (let x = 0; x < 20; x += 1) statuses.push((await get(port, `127.0.${100 + x}.9`, id)).status);
    expect(statuses).toEqual(Array<number>(20).fill(401));
    expect((await lookups(app)) - before).toBe(1);
    // A key that exists is looked up as before.
    const user = await createUser(store, { orgGid: org.org.gid, username: 'looked-up@example.org', role: ROLE.reader });
    const real = await createApiKey(store, { username: user.username });
    expect((await get(port, '127.0.150.1', real.key)).status).toBe(200);
    expect((await lookups(app)) - before).toBe(2);
  });
});
