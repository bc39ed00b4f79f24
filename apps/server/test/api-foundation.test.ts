import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE } from '@rampart/contracts';
import { EVAL_JS, EXEC_PYTHON } from '@rampart/scoring';
import type { Store } from '../src/store/index.ts';
import { createApiKey, createUser } from '../src/services/operators/admin.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

describe.each(driverCases())('API foundation on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store, { bodyLimitBytes: 4096 });
    acme = await seedOrg(store, { credits: 1000, trust: 0.85, name: 'Acme' });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('answers /version without a key', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/version' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['RMP_instance', 'application', 'e', 'hostname', 'is_master', 'm', 'version']);
    expect(body.version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(body.e).toBe('');
  });

  it('serves liveness and readiness outside the API', async () => {
    expect((await app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    expect((await app.inject('/readyz')).json()).toEqual({ status: 'ok', store: driver.name });
  });

  it('accepts the key alone and after Bearer, and returns the real user in an empty IPv4 page', async () => {
    for (const authorization of [acme.keys.reader, `Bearer ${acme.keys.reader}`]) {
      const res = await app.inject({ url: '/api/v1/ips?ts=0', headers: { authorization } });
      expect(res.statusCode).toBe(200);
      const page = res.json();
      expect(page.body).toEqual([]);
      expect(page.header).toMatchObject({ type: 'IPv4', version: 2, ts: '0', next_ts: 0, page_size: 50, delay: 0, eval: EVAL_JS, exec_python: EXEC_PYTHON });
      expect(page.header.user).toMatchObject({ role: ROLE.reader, unsuccessful_login: 0, member_of: { gid: acme.org.gid, name: 'Acme', trust: 0.85, delay: '0' } });
      expect(page.header.user.guid).toMatch(/^RMP-GUID-/);
    }
  });

  it('refuses missing, malformed, unknown and revoked keys with 401 problem+json and counts failed logins', async () => {
    const none = await app.inject({ url: '/api/v1/ips' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(none.json()).toMatchObject({ type: 'https://rampart.dev/problems/unauthorized', status: 401, instance: '/api/v1/ips' });
    expect((await app.inject({ url: '/api/v1/ips', headers: { authorization: 'nonsense' } })).statusCode).toBe(401);

    const org = await seedOrg(store);
    const user = await createUser(store, { orgGid: org.org.gid, username: 'wrong.secret@example.org', role: ROLE.reader });
    const { key, keyId } = await createApiKey(store, { username: user.username });
    const forged = `rmp_${keyId}_${'A'.repeat(43)}`;
    expect((await app.inject({ url: '/api/v1/ips', headers: { authorization: forged } })).statusCode).toBe(401);
    await store.keys.revoke(keyId);
    const revoked = await app.inject({ url: '/api/v1/ips', headers: { authorization: key } });
    expect(revoked.statusCode).toBe(401);
    expect(revoked.json().detail).toBe('the API key was revoked');
    expect((await store.users.byUsername(user.username))?.unsuccessful_login).toBe(2);
  });

  it('enforces roles per route with 403', async () => {
    const body = { ip: '45.77.100.7', confidence: 0.9, source: 'ssh' };
    const asReader = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: acme.keys.reader }, payload: body });
    expect(asReader.statusCode).toBe(403);
    expect(asReader.json().detail).toBe("this operation needs role 2 or higher; the key's role is 1");
    const asAdmin = await app.inject({ method: 'POST', url: '/api/v1/vpn', headers: { authorization: acme.keys.contributor }, payload: { account_name: 'x' } });
    expect(asAdmin.statusCode).toBe(403);
  });

  it('charges a successful priced request once and says so in headers', async () => {
    // A page with a record: the empty "nothing new" page is free.
    await sqlOf(store).query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ('RMP-RULE-GID-FOUND1', '198.51.100.200/32', false, 500, 1, 1)`);
    const before = (await store.orgs.byGid(acme.org.gid))!;
    const res = await app.inject({ url: '/api/v1/ips', headers: { authorization: acme.keys.reader } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-coins-cost']).toBe('1');
    expect(res.headers['x-coins-remaining']).toBe(String(before.credit_tokens - before.debit_tokens - 1));
    expect((await store.orgs.byGid(acme.org.gid))!.debit_tokens).toBe(before.debit_tokens + 1);
  });

  it('does not charge requests that fail', async () => {
    const before = (await store.orgs.byGid(acme.org.gid))!.debit_tokens;
    const invalid = await app.inject({ url: '/api/v1/ips?page_size=0', headers: { authorization: acme.keys.reader } });
    expect(invalid.statusCode).toBe(400);
    // A priced look-up that finds nothing is charged, then refunded: 404 costs nothing.
    const unknown = await app.inject({ url: `/api/v1/files/${'ab'.repeat(32)}`, headers: { authorization: acme.keys.reader } });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['x-coins-cost']).toBe('0');
    expect((await store.orgs.byGid(acme.org.gid))!.debit_tokens).toBe(before);
  });

  it('answers 402 before any work when the balance is too small', async () => {
    const poor = await seedOrg(store, { credits: 0 });
    const res = await app.inject({ url: '/api/v1/ips', headers: { authorization: poor.keys.reader } });
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({ status: 402, balance: 0, price: 1 });
    expect(res.headers['x-coins-remaining']).toBe('0');
  });

  it('reports every failing field of a bad query with 400', async () => {
    const res = await app.inject({ url: '/api/v1/ips?page_size=1001&ts=-1&full=maybe', headers: { authorization: acme.keys.reader } });
    expect(res.statusCode).toBe(400);
    const paths = res.json().errors.map((e: { path: string }) => e.path).sort();
    expect(paths).toEqual(['querystring.full', 'querystring.page_size', 'querystring.ts']);
  });

  it("turns fastify's own errors into problem+json", async () => {
    const auth = { authorization: acme.keys.contributor };
    const unknown = await app.inject({ url: '/api/v1/nope', headers: auth });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ type: 'https://rampart.dev/problems/route_not_found', status: 404 });
    const badJson = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { ...auth, 'content-type': 'application/json' }, payload: '{"ip":' });
    expect(badJson.statusCode).toBe(400);
    expect(badJson.headers['content-type']).toMatch(/problem\+json/);
    const tooLarge = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { ...auth, 'content-type': 'application/json' }, payload: JSON.stringify({ notes: 'x'.repeat(5000) }) });
    expect(tooLarge.statusCode).toBe(413);
    const media = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { ...auth, 'content-type': 'application/xml' }, payload: '<ip/>' });
    expect(media.statusCode).toBe(415);
    for (const res of [unknown, badJson, tooLarge, media]) {
      expect(res.body).not.toMatch(/at .*\.ts:\d+|select |insert /i);
    }
  });

  it('exposes Prometheus metrics by route and status', async () => {
    const res = await app.inject('/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/rampart_http_requests_total\{method="GET",route="\/api\/v1\/ips",status="200"\} \d+/);
    expect(res.body).toMatch(/rampart_coin_debits_total\{kind="feed"\} \d+/);
    expect(res.body).toContain('rampart_store_pool_connections{state="total"}');
  });
});

describe('metrics behind METRICS_TOKEN', () => {
  it('answers only the bearer of the token when it is set, and everyone when it is not', async () => {
    const [pglite] = driverCases();
    const store = await pglite!.open();
    const token = 'metrics-token-0123456789abcdef';
    const guarded = await testApp(store, { metricsToken: token });
    const open = await testApp(store);
    try {
      for (const authorization of [undefined, 'Bearer wrong-token-0123456789abcdef', token, `Basic ${token}`, `Bearer ${token}x`]) {
        const res = await guarded.inject({ url: '/metrics', headers: authorization === undefined ? {} : { authorization } });
        expect(res.statusCode).toBe(401);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.headers['www-authenticate']).toBe('Bearer realm="metrics"');
        expect(res.json()).toMatchObject({ type: 'https://rampart.dev/problems/unauthorized', detail: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>' });
        expect(res.body).not.toContain('rampart_');
      }
      const ok = await guarded.inject({ url: '/metrics', headers: { authorization: `Bearer ${token}` } });
      expect(ok.statusCode).toBe(200);
      expect(ok.body).toContain('rampart_http_requests_total');
      expect((await open.inject({ url: '/metrics' })).statusCode).toBe(200);
    } finally {
      await guarded.close();
      await open.close();
      await store.close();
    }
  });

  it('refuses a METRICS_TOKEN too short to be a secret', async () => {
    const { loadConfig } = await import('../src/config.ts');
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow('METRICS_TOKEN: at least 16 characters');
    expect(loadConfig({ METRICS_TOKEN: 'x'.repeat(16) }).metricsToken).toBe('x'.repeat(16));
  });
});

describe('rate limiting', () => {
  it('answers 429 with Retry-After once a key exceeds its budget', async () => {
    const [pglite] = driverCases();
    const store = await pglite!.open();
    const app = await testApp(store, { rateLimitPerMinute: 3 });
    const org = await seedOrg(store);
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 4; i += 1) {
      last = await app.inject({ url: '/api/v1/ips', headers: { authorization: org.keys.reader } });
      statuses.push(last.statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
    expect(last!.json()).toMatchObject({ type: 'https://rampart.dev/problems/rate_limited', status: 429 });
    await app.close();
    await store.close();
  });
});
