import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORTED_PLUGIN_NAMES, ROLE } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { createApiKey, createUser } from '../src/services/operators/admin.ts';
import { AGENT_KEY_ROUTES } from '../src/plugins/agent-routes.ts';
import { registerAgent } from './support/agents.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/** The rows of docs/api.md's table of agent key routes. */
function readmeAgentRoutes(): { method: string; url: string; use: string }[] {
  const readme = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8');
  const table = /<!-- agent-key-routes -->\n([\s\S]*?)<!-- \/agent-key-routes -->/.exec(readme);
  if (!table) throw new Error('docs/api.md has no agent-key-routes table');
  return table[1]!
    .trim()
    .split('\n')
    .slice(2)
    .map((row) => {
      const [method, url, use] = row.split(' | ').map((cell) => cell.replace(/^\|\s*|\s*\|$/g, '').trim());
      return { method: method!.replaceAll('`', ''), url: url!.replaceAll('`', ''), use: use! };
    });
}

describe('agent key routes', () => {
  it('are the README table, row for row', () => {
    expect(readmeAgentRoutes()).toEqual(AGENT_KEY_ROUTES.map((r) => ({ ...r })));
  });
});

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
    // A key verified before, from anywhere, is known good.
    expect((await ips(acme.keys.reader, '192.0.2.9')).statusCode).toBe(200);
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
    // The locked address is refused a key this replica never read, valid or not, but not one known
    // good (others behind the same NAT or proxy; the guessed key's owner); other addresses are not locked.
    const fresh = await createApiKey(store, { username: user.username });
    expect((await ips(fresh.key, '192.0.2.10')).statusCode).toBe(429);
    expect((await ips(acme.keys.reader, '192.0.2.10')).statusCode).toBe(200);
    expect((await ips(key, '192.0.2.10')).statusCode).toBe(200);
    expect((await ips(fresh.key, '192.0.2.11')).statusCode).toBe(200);
    expect((await ips(fresh.key, '192.0.2.10')).statusCode).toBe(200);
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
    // An agent key verified before passes the locked address; one never verified does not.
    const known = await registerAgent(app, acme.keys.admin);
    const fresh = await registerAgent(app, acme.keys.admin);
    expect((await ips(known.token, '203.0.113.7')).statusCode).toBe(200);
    expect((await ips(known.token, '203.0.113.6')).statusCode).toBe(200);
    expect((await ips(fresh.token, '203.0.113.6')).statusCode).toBe(429);
  });

  it('opens only the allow-listed routes to an agent key, and they all exist', async () => {
    for (const route of AGENT_KEY_ROUTES) expect(app.hasRoute({ method: route.method, url: route.url }), `${route.method} ${route.url}`).toBe(true);
    const agent = await registerAgent(app, acme.keys.admin);
    const headers = { authorization: agent.token };
    const forbidden = ['/me', '/flat/500', '/domains/example.org', '/urls/http%3A%2F%2Fexample.org%2F', '/files/' + 'a'.repeat(64), '/info/cdn/list', '/agents', '/keys'];
    for (const url of forbidden) {
      const res = await app.inject({ url: `/api/v1${url}`, headers });
      expect(res.statusCode, url).toBe(403);
      expect(res.json().type, url).toBe('https://rampart.dev/problems/forbidden');
    }
    // The feeds and score lists of every kind an enforcer may take (issue 17 item 7); look-ups stay closed.
    const open = ['/ips?ts=0', '/ipv4/500', '/ips/192.0.2.1', `/agents/${agent.gaid}/config`, '/files?ts=0', '/domains?ts=0', '/urls?ts=0'];
    open.push('/files/score/500?digest=SHA256', '/domains/score/500?protocol=HTTP', '/urls/score/500');
    for (const url of open) {
      expect((await app.inject({ url: `/api/v1${url}`, headers })).statusCode, url).toBe(200);
    }
  });

  it('refuses an organization decision in an agent key report with 403, and takes the report without one', async () => {
    const agent = await registerAgent(app, acme.keys.admin);
    const headers = { authorization: agent.token };
    const report = { ip: '45.77.100.99', confidence: 0.9, source: 'ssh' };
    const future = Math.floor(Date.now() / 1000) + 3600;
    for (const extra of [{ decision: 0 }, { decision: '0' }, { decision: 1, ttl: future }, { decision: -1 }]) {
      const res = await app.inject({ method: 'POST', url: '/api/v1/ips', headers, payload: { ...report, ...extra } });
      expect(res.statusCode, JSON.stringify(extra)).toBe(403);
      expect(res.json().detail).toMatch(/decision/);
    }
    const lookup = await app.inject({ url: '/api/v1/ips/45.77.100.99', headers: { authorization: acme.keys.reader } });
    expect(lookup.json().body).toEqual([]);
    expect((await app.inject({ method: 'POST', url: '/api/v1/ips', headers, payload: report })).statusCode).toBe(201);
    const after = await app.inject({ url: '/api/v1/ips/45.77.100.99', headers: { authorization: acme.keys.reader } });
    expect([0, 1]).not.toContain(after.json().body[0].decision);
  });

  it('takes feedback only under known plugin names, so an agent record stays small', async () => {
    const agent = await registerAgent(app, acme.keys.admin);
    const feedback = (plugin: string) =>
      app.inject({
        method: 'POST',
        url: '/api/v1/agents/feedback',
        headers: { authorization: agent.token },
        payload: { agid: agent.gaid, plugin, hostname: 'h'.repeat(255), code: 'c'.repeat(256), score_threshold: 500, blacklist: 7 },
      });
    for (let i = 0; i < 200; i += 1) {
      const res = await feedback(`plugin-${i}-${'x'.repeat(100)}`);
      expect(res.statusCode).toBe(400);
      expect(res.json().errors.map((e: { path: string }) => e.path)).toEqual(['body.plugin']);
    }
    for (const plugin of REPORTED_PLUGIN_NAMES) for (let i = 0; i < 3; i += 1) expect((await feedback(plugin)).statusCode, plugin).toBe(200);
    const listed = (await app.inject({ url: '/api/v1/agents', headers: { authorization: acme.keys.admin } })).json() as { gaid: string }[];
    const record = listed.find((a) => a.gaid === agent.gaid);
    expect(Object.keys((record as unknown as { enforced: object }).enforced).sort()).toEqual([...REPORTED_PLUGIN_NAMES].sort());
    // Each entry carries its read-back attestation too (expected, held, drift: ~250 bytes); the 200
    // refused names alone would have added well over 100 KiB.
    expect(JSON.stringify(record).length).toBeLessThan(32 * 1024);
  });

  it('lets an admin revoke keys of roles up to its own, never an operator\'s (403)', async () => {
    const operator = await createUser(store, { orgGid: acme.org.gid, username: 'operator.hostile@example.org', role: ROLE.operator });
    const opKey = await createApiKey(store, { username: operator.username });
    const contributor = await createUser(store, { orgGid: acme.org.gid, username: 'contrib.hostile@example.org', role: ROLE.contributor });
    const contribKey = await createApiKey(store, { username: contributor.username });
    const revoke = (keyId: string, authorization: string) => app.inject({ method: 'DELETE', url: `/api/v1/keys/${keyId}`, headers: { authorization }, remoteAddress: '192.0.2.80' });
    const refused = await revoke(opKey.keyId, acme.keys.admin);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().detail).toMatch(/higher role/);
    expect((await ips(opKey.key, '192.0.2.81')).statusCode).toBe(200);
    expect((await revoke(contribKey.keyId, acme.keys.admin)).statusCode).toBe(200);
    expect((await revoke(opKey.keyId, opKey.key)).statusCode).toBe(200);
    expect((await ips(opKey.key, '192.0.2.82')).statusCode).toBe(401);
  });

  it('counts failed authentications, lock-outs and the requests they refuse in /metrics', async () => {
    const counted = await testApp(store, { authFailuresPerAddress: 3, authFailuresPerKey: 4 });
    try {
      const user = await createUser(store, { orgGid: acme.org.gid, username: 'metered@example.org', role: ROLE.reader });
      const { keyId } = await createApiKey(store, { username: user.username });
      const send = (authorization: string, remoteAddress: string) => counted.inject({ url: '/api/v1/ips?ts=0', headers: { authorization }, remoteAddress });
      const statuses: number[] = [];
      // A wrong secret on a known key id from four addresses: the key id locks out at its 4th
      // failure (and the first address at its 3rd).
      for (const address of ['192.0.2.100', '192.0.2.100', '192.0.2.100', '192.0.2.101', '192.0.2.102']) statuses.push((await send(`rmp_${keyId}_${'G'.repeat(43)}`, address)).statusCode);
      // An unknown key id and a forged agent key from fresh addresses.
      statuses.push((await send(`rmp_${'3'.repeat(12)}_${'G'.repeat(43)}`, '192.0.2.103')).statusCode);
      statuses.push((await send(`eyJhbGciOiJIUzI1NiJ9.${Buffer.from('{"sub":"y"}').toString('base64url')}.${'G'.repeat(43)}`, '192.0.2.104')).statusCode);
      // The locked address, with a key this replica never read.
      statuses.push((await send(`rmp_${'4'.repeat(12)}_${'G'.repeat(43)}`, '192.0.2.100')).statusCode);
      expect(statuses).toEqual([401, 401, 401, 401, 429, 401, 401, 429]);
      const metrics = (await counted.inject({ url: '/metrics' })).body;
      const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\d+)$`, 'm').exec(metrics)?.[1] ?? 0);
      expect(value('rampart_auth_failures_total{reason="wrong_secret"}')).toBe(4);
      expect(value('rampart_auth_failures_total{reason="unknown_key"}')).toBe(1);
      expect(value('rampart_auth_failures_total{reason="agent_key"}')).toBe(1);
      expect(value('rampart_auth_failures_total{reason="revoked_key"}')).toBe(0);
      expect(value('rampart_auth_lockouts_total{subject="address"}')).toBe(1);
      expect(value('rampart_auth_lockouts_total{subject="key_id"}')).toBe(1);
      expect(value('rampart_auth_locked_out_requests_total{subject="key_id"}')).toBe(1);
      expect(value('rampart_auth_locked_out_requests_total{subject="address"}')).toBe(1);
    } finally {
      await counted.close();
    }
  });

  it('counts the client behind a trusted proxy by X-Forwarded-For', async () => {
    const proxied = await testApp(store, { trustProxy: ['192.0.2.200'], authFailuresPerAddress: 2 });
    try {
      const send = (client: string) =>
        proxied.inject({ url: '/api/v1/ips', headers: { authorization: `rmp_${'2'.repeat(12)}_${'F'.repeat(43)}`, 'x-forwarded-for': client }, remoteAddress: '192.0.2.200' });
      expect([(await send('203.0.113.20')).statusCode, (await send('203.0.113.20')).statusCode, (await send('203.0.113.20')).statusCode]).toEqual([401, 401, 429]);
      expect((await send('203.0.113.21')).statusCode).toBe(401);
    } finally {
      await proxied.close();
    }
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
