import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { createApiKey, createUser } from '../src/services/admin.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/** Issue 18, the HTTP side: what a hostile or broken client can make the server do. */
describe.each(driverCases())('hostile clients on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store, { authFailuresPerAddress: 5, authFailuresPerKey: 8, rateLimitPerMinute: 1_000_000 });
    acme = await seedOrg(store, { name: 'Acme hostile' });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const ips = (authorization: string, remoteAddress: string) => app.inject({ url: '/api/v1/ips?ts=0', headers: { authorization }, remoteAddress });

  it('locks an address out after its failed authentications, before any store work, with 429 and Retry-After', async () => {
    const user = await createUser(store, { orgGid: acme.org.gid, username: 'guessed@example.org', role: ROLE.reader });
    const { key, keyId } = await createApiKey(store, { username: user.username });
    const forged = `rmp_${keyId}_${'A'.repeat(43)}`;
    const statuses: number[] = [];
    for (let i = 0; i < 50; i += 1) statuses.push((await ips(forged, '192.0.2.10')).statusCode);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(new Set(statuses.slice(5))).toEqual(new Set([429]));
    const refused = await ips(forged, '192.0.2.10');
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.json()).toMatchObject({ type: 'https://rampart.dev/problems/rate_limited', status: 429 });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Only the attempts before the lock-out reached the store.
    expect((await store.users.byUsername(user.username))?.unsuccessful_login).toBe(5);
    // The locked address is refused even with a valid key; other addresses are not.
    expect((await ips(key, '192.0.2.10')).statusCode).toBe(429);
    expect((await ips(key, '192.0.2.11')).statusCode).toBe(200);
  });

  it('locks a key id out across addresses, but never its owner', async () => {
    const user = await createUser(store, { orgGid: acme.org.gid, username: 'spread@example.org', role: ROLE.reader });
    const { key, keyId } = await createApiKey(store, { username: user.username });
    const forged = `rmp_${keyId}_${'B'.repeat(43)}`;
    const statuses: number[] = [];
    for (let i = 0; i < 16; i += 1) statuses.push((await ips(forged, `198.51.100.${i}`)).statusCode);
    expect(statuses).toEqual([...Array<number>(8).fill(401), ...Array<number>(8).fill(429)]);
    expect((await store.users.byUsername(user.username))?.unsuccessful_login).toBe(8);
    expect((await ips(key, '198.51.100.200')).statusCode).toBe(200);
  });

  it('counts unknown key ids and forged agent keys per address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i += 1) statuses.push((await ips(`rmp_${'0'.repeat(11)}${i}_${'C'.repeat(43)}`, '203.0.113.5')).statusCode);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    const jwt = `eyJhbGciOiJIUzI1NiJ9.${Buffer.from('{"sub":"x"}').toString('base64url')}.${'D'.repeat(43)}`;
    const agentStatuses: number[] = [];
    for (let i = 0; i < 6; i += 1) agentStatuses.push((await ips(jwt, '203.0.113.6')).statusCode);
    expect(agentStatuses).toEqual([401, 401, 401, 401, 401, 429]);
  });

  it('keeps /healthz and /readyz outside the request rate limit', async () => {
    const limited = await testApp(store, { rateLimitPerMinute: 2 });
    try {
      for (let i = 0; i < 5; i += 1) {
        expect((await limited.inject({ url: '/healthz', remoteAddress: '192.0.2.50' })).statusCode).toBe(200);
        expect((await limited.inject({ url: '/readyz', remoteAddress: '192.0.2.50' })).statusCode).toBe(200);
      }
      expect((await limited.inject({ url: '/api/v1/version', remoteAddress: '192.0.2.50' })).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('divides the budgets by RATE_LIMIT_REPLICAS', async () => {
    const shared = await testApp(store, { rateLimitPerMinute: 6, rateLimitReplicas: 3, authFailuresPerAddress: 6, authFailuresPerKey: 100 });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i += 1) statuses.push((await shared.inject({ url: '/api/v1/ips?ts=0', headers: { authorization: acme.keys.reader } })).statusCode);
      expect(statuses).toEqual([200, 200, 429]);
      const failures: number[] = [];
      for (let i = 0; i < 3; i += 1) failures.push((await shared.inject({ url: '/api/v1/ips', headers: { authorization: `rmp_${'1'.repeat(12)}_${'E'.repeat(43)}` }, remoteAddress: '192.0.2.60' })).statusCode);
      expect(failures).toEqual([401, 401, 429]);
    } finally {
      await shared.close();
    }
  });
});
