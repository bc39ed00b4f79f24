import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE } from '@rampart/contracts';
import { createApiKey, createUser } from '../src/services/operators/admin.ts';
import { testConfig, type AppConfig } from '../src/config.ts';
import { generateWireGuardKeyPair } from '../src/services/vpn/keys.ts';
import { openStore, type Store } from '../src/store/index.ts';
import { registerAgent } from './support/agents.ts';
import { examplePath, exampleBody, exampleQuery, longPathValue, type OwnedIds } from './support/api-examples.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { constraintCases, namesField } from './support/constraint-cases.ts';
import { driverCases } from './support/databases.ts';
import { baselineRequest, encodeSegment, malformedRequests, type Baseline } from './support/malformed-input.ts';
import { apiOperations, pathParams, type ApiOperation } from './support/openapi-operations.ts';
import { describeExchange, errorPaths, responseViolations, type ProbeRequest } from './support/response-checks.ts';

/*
 * Property-based robustness of the whole HTTP API: every route of the generated OpenAPI
 * document gets malformed input and must answer a clear 4xx problem (never a 5xx, never a
 * stack trace or SQL), honour every bound its contract declares, keep organizations apart,
 * and accept a valid example. FC_SEED replays another sequence; FC_RUNS changes the runs per route.
 */
const SEED = Number(process.env.FC_SEED ?? 20_261_123);
const RUNS = Number(process.env.FC_RUNS ?? 40);
fc.configureGlobal({ seed: SEED, numRuns: RUNS, endOnFailure: true });

const vpnServer = generateWireGuardKeyPair();
const base = testConfig().tools;
const appOptions: Partial<AppConfig> = {
  rateLimitPerMinute: 1_000_000,
  // The isolation cases send forged and foreign keys by the hundred from one address.
  authFailuresPerAddress: 1_000_000,
  authFailuresPerKey: 1_000_000,
  bodyLimitBytes: 256 * 1024,
  tools: { ...base, vpn: { ...base.vpn, pool: '10.98.0.0/20', endpoint: 'vpn.example.org:51820', serverPublicKey: vpnServer.publicKey, dns: ['10.98.0.1'] } },
};

/** Operations from the document the app generates, deletions last so they do not remove what the others use. */
async function documentOperations(): Promise<ApiOperation[]> {
  const store = await openStore({});
  const app = await testApp(store, appOptions);
  try {
    const ops = apiOperations(JSON.parse(JSON.stringify(app.swagger())));
    return [...ops.filter((o) => o.method !== 'DELETE'), ...ops.filter((o) => o.method === 'DELETE')];
  } finally {
    await app.close();
    await store.close();
  }
}
const OPERATIONS = await documentOperations();
const WITH_BODY = OPERATIONS.filter((op) => op.body);
/** The one API operation open without a key (the document does not mark it: its security is global). */
const PUBLIC_OPERATION = 'GET /api/v1/version';
/**
 * CrowdSec bouncer routes take their agent key in X-Api-Key and answer 403 without a valid one, as
 * CrowdSec's Local API does. The watcher routes beside them (login, alerts) take credentials of their own.
 */
const isBouncerRoute = (path: string) => /^\/api\/v1\/crowdsec\/v1\/(decisions|usage-metrics)/.test(path);
/** Path parameters that name an organization's own objects. */
const OWNED_PARAMS = new Set(['agid', 'token_id', 'vid', 'key_id']);

interface Owned extends OwnedIds {
  markers: string[];
}

/** An agent with a key, a VPN license and an extra API key, created through the API; markers are unique text inside them. */
async function ownedObjects(app: FastifyInstance, org: TestOrg): Promise<Owned> {
  const tag = randomBytes(5).toString('hex');
  const log = `/var/log/marker-${tag}.log`;
  const agent = await registerAgent(app, org.keys.admin, { ids: { ssh_log: { active: true, ssh_log_location: log } } });
  const vpn = await app.inject({ method: 'POST', url: '/api/v1/vpn', headers: { authorization: org.keys.admin }, payload: { account_name: `vpn-marker-${tag}` } });
  if (vpn.statusCode !== 200) throw new Error(`vpn license failed: ${vpn.statusCode} ${vpn.body}`);
  const key = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: { authorization: org.keys.admin }, payload: { label: `key-marker-${tag}` } });
  if (key.statusCode !== 201) throw new Error(`api key failed: ${key.statusCode} ${key.body}`);
  const keyId = (key.json() as { key_id: string }).key_id;
  // The spec's POST /vpn answers an empty body; the new license is named by Location.
  const vid = String(vpn.headers.location).split('/').pop()!;
  return { agid: agent.gaid, tokenId: agent.tokenId, vid, keyId, gid: org.org.gid, markers: [log, `vpn-marker-${tag}`, `key-marker-${tag}`] };
}

describe.each(driverCases())('API robustness on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let prober: TestOrg;
  let probed: Owned;
  let operatorKey: string;
  let bouncerKey: string;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store, appOptions);
    prober = await seedOrg(store, { credits: 100_000_000, name: 'Prober' });
    probed = await ownedObjects(app, prober);
    const username = `operator.${prober.org.gid.slice(-8).toLowerCase()}@example.org`;
    await createUser(store, { orgGid: prober.org.gid, username, role: ROLE.operator });
    operatorKey = (await createApiKey(store, { username })).key;
    bouncerKey = (await registerAgent(app, prober.keys.admin)).token;
  });
  /** Operator routes are probed as an alliance operator, bouncer routes with an agent key (others are refused before validation). */
  const keyFor = (op: ApiOperation) => (op.path.startsWith('/api/v1/operator/') ? operatorKey : isBouncerRoute(op.path) ? bouncerKey : prober.keys.admin);
  afterAll(async () => {
    await app?.close();
    await store?.close();
  });

  const baselineOf = (op: ApiOperation, key: string, ids: OwnedIds): Baseline => ({ path: examplePath(op, ids), query: exampleQuery(op), body: exampleBody(op, ids), key });
  /** A bouncer route gets what a request carries in Authorization in X-Api-Key instead. */
  const headersFor = (req: ProbeRequest) => {
    if (!isBouncerRoute(req.url) || req.headers.authorization === undefined) return req.headers;
    const { authorization, ...rest } = req.headers;
    return { ...rest, 'x-api-key': authorization };
  };
  const send = async (req: ProbeRequest) => app.inject({ method: req.method as 'GET', url: req.url, headers: headersFor(req), ...(req.payload === undefined ? {} : { payload: req.payload }) });

  it('enumerates the routes from the generated OpenAPI document', () => {
    const ids = OPERATIONS.map((o) => o.id);
    expect(ids).toContain('POST /api/v1/agents');
    expect(ids).toContain('GET /api/v1/ips/{ipv4}');
    expect(ids.length).toBeGreaterThanOrEqual(40);
  });

  describe('a valid example body', () => {
    it.each(WITH_BODY)('$id is accepted without a 5xx', async (op) => {
      const req = baselineRequest(op, baselineOf(op, keyFor(op), probed));
      const res = await send(req);
      expect(responseViolations(req, res), describeExchange(req, res)).toEqual([]);
      // A valid example must pass validation, or the constraint and fuzz tests below start from a broken request.
      expect(res.statusCode, describeExchange(req, res)).not.toBe(400);
    });
  });

  it('answers every route for every kind of caller with a success or a 4xx problem', async () => {
    const agent = await registerAgent(app, prober.keys.admin);
    const callers: Record<string, Record<string, string>> = {
      anonymous: {},
      reader: { authorization: prober.keys.reader },
      contributor: { authorization: prober.keys.contributor },
      agent: { [agent.header.toLowerCase()]: agent.token },
    };
    const wrong: string[] = [];
    for (const op of OPERATIONS.filter((o) => o.method !== 'DELETE')) {
      for (const [who, headers] of Object.entries(callers)) {
        const req = baselineRequest(op, baselineOf(op, '', probed));
        delete req.headers.authorization;
        Object.assign(req.headers, headers);
        const res = await send(req);
        const violations = responseViolations(req, res);
        const refused = isBouncerRoute(op.path) ? 403 : 401;
        if (who === 'anonymous' && op.id !== PUBLIC_OPERATION && res.statusCode !== refused) violations.push(`expected ${refused} without credentials`);
        if (violations.length) wrong.push(`${op.id} as ${who}: ${violations.join('; ')}\n${describeExchange(req, res)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  describe('the bounds the document declares', () => {
    it.each(OPERATIONS)('$id refuses each broken bound with a 400 naming the field', async (op) => {
      const wrong: string[] = [];
      for (const c of constraintCases(op, baselineOf(op, keyFor(op), probed))) {
        const res = await send(c.request);
        const violations = responseViolations(c.request, res);
        const named = namesField(errorPaths(res), c.field);
        if (c.expect === 'reject' && (res.statusCode !== 400 || !named)) violations.push(`expected a 400 naming ${c.field}`);
        if (c.expect === 'accept' && named) violations.push(`expected ${c.field} to be accepted`);
        if (c.expect === 'survive' && res.statusCode === 400 && !named) violations.push(`a 400 must name ${c.field}`);
        if (violations.length) wrong.push(`${c.label}: ${violations.join('; ')}\n${describeExchange(c.request, res)}`);
      }
      expect(wrong).toEqual([]);
    }, 120_000);
  });

  describe('malformed input', () => {
    it.each(OPERATIONS)('$id answers a 4xx problem, never a 5xx or internals', async (op) => {
      await fc.assert(
        fc.asyncProperty(malformedRequests(op, baselineOf(op, keyFor(op), probed)), async (req) => {
          const res = await send(req);
          const violations = responseViolations(req, res);
          if (violations.length) throw new Error(`${violations.join('; ')}\n${describeExchange(req, res)}`);
        }),
      );
    }, 120_000);

    it('answers a path with a broken percent-escape with a 400 problem on every route with a path parameter', async () => {
      const wrong: string[] = [];
      for (const op of OPERATIONS.filter((o) => pathParams(o).length > 0)) {
        const base = baselineOf(op, keyFor(op), probed);
        for (const segment of ['%zz', '%ED%A0%80']) {
          const req = baselineRequest(op, { ...base, path: { ...base.path, [pathParams(op)[0]!.name]: segment } });
          const res = await send(req);
          const violations = responseViolations(req, res);
          if (res.statusCode !== 400) violations.push('expected 400');
          if (violations.length) wrong.push(`${op.id}: ${violations.join('; ')}\n${describeExchange(req, res)}`);
        }
      }
      expect(wrong).toEqual([]);
    });

    it('routes path values as long as their declared maxLength (beyond a 100-character router limit)', async () => {
      const wrong: string[] = [];
      for (const op of OPERATIONS) {
        const base = baselineOf(op, keyFor(op), probed);
        for (const p of pathParams(op)) {
          const long = longPathValue(p);
          if (long === undefined || long.length <= 100) continue;
          const req = baselineRequest(op, { ...base, path: { ...base.path, [p.name]: encodeSegment(long) } });
          const res = await send(req);
          const violations = responseViolations(req, res);
          if (res.statusCode === 414 || namesField(errorPaths(res), `params.${p.name}`)) violations.push(`a valid ${long.length}-character ${p.name} was refused`);
          if (violations.length) wrong.push(`${op.id}: ${violations.join('; ')}\n${describeExchange(req, res)}`);
        }
      }
      expect(wrong).toEqual([]);
    });

    it('answers JSON that does not parse with a 400 naming the body on every route that takes one', async () => {
      const wrong: string[] = [];
      for (const op of WITH_BODY) {
        for (const text of ['{', '{"a":1,}', '']) {
          const req = { ...baselineRequest(op, baselineOf(op, keyFor(op), probed)), payload: text };
          const res = await send(req);
          const violations = responseViolations(req, res);
          if (res.statusCode !== 400 || !namesField(errorPaths(res), 'body')) violations.push('expected a 400 naming body');
          if (violations.length) wrong.push(`${op.id} ${JSON.stringify(text)}: ${violations.join('; ')}\n${describeExchange(req, res)}`);
        }
      }
      expect(wrong).toEqual([]);
    });

    it('refuses a body over the limit with 413 on every route that takes one', async () => {
      const wrong: string[] = [];
      for (const op of WITH_BODY) {
        const req = { ...baselineRequest(op, baselineOf(op, keyFor(op), probed)), payload: JSON.stringify({ pad: 'x'.repeat(300 * 1024) }) };
        const res = await send(req);
        const violations = responseViolations(req, res);
        if (res.statusCode !== 413) violations.push('expected 413');
        if (violations.length) wrong.push(`${op.id}: ${violations.join('; ')}\n${describeExchange(req, res)}`);
      }
      expect(wrong).toEqual([]);
    });
  });

  describe('organization isolation', () => {
    let victim: TestOrg;
    let owned: Owned;
    let intruder: TestOrg;
    let intruderOwned: Owned;

    beforeAll(async () => {
      victim = await seedOrg(store, { credits: 1_000_000, name: 'Victim' });
      intruder = await seedOrg(store, { credits: 1_000_000, name: 'Intruder' });
      owned = await ownedObjects(app, victim);
      intruderOwned = await ownedObjects(app, intruder);
    });

    const leaks = (text: string) => [owned.gid, ...owned.markers].filter((m) => text.includes(m));

    it("answers 403 or 404 to another organization's admin on every route naming an object", async () => {
      const ops = OPERATIONS.filter((op) => pathParams(op).some((p) => OWNED_PARAMS.has(p.name)));
      expect(ops.length).toBeGreaterThanOrEqual(8);
      const wrong: string[] = [];
      for (const op of ops) {
        const req = baselineRequest(op, baselineOf(op, intruder.keys.admin, owned));
        const res = await send(req);
        const violations = [...responseViolations(req, res), ...leaks(res.body).map((m) => `leaks ${m}`)];
        if (res.statusCode !== 403 && res.statusCode !== 404) violations.push('expected 403 or 404');
        if (violations.length) wrong.push(`${op.id}: ${violations.join('; ')}\n${describeExchange(req, res)}`);
      }
      expect(wrong).toEqual([]);
    });

    it("never shows an organization's objects in another's lists, look-ups or documents", async () => {
      const wrong: string[] = [];
      for (const op of OPERATIONS.filter((o) => o.method === 'GET')) {
        const req = baselineRequest(op, baselineOf(op, intruder.keys.admin, intruderOwned));
        const res = await send(req);
        const found = [owned.agid, owned.vid, owned.keyId, owned.tokenId, ...leaks(res.body)].filter((m) => res.body.includes(m));
        if (found.length || res.statusCode >= 500) wrong.push(`${op.id}: shows ${found.join(', ')}\n${describeExchange(req, res)}`);
      }
      expect(wrong).toEqual([]);
    });

    it("leaves the organization's objects intact after the intrusions, and ignores check-ins naming its agent", async () => {
      const as = (url: string) => app.inject({ url, headers: { authorization: victim.keys.admin } });
      const report = await app.inject({ method: 'POST', url: `/api/v1/ips?gaid=${owned.agid}`, headers: { authorization: intruder.keys.contributor }, payload: { ip: '45.77.100.9', confidence: 0.5, source: 'ssh_log' } });
      expect(report.statusCode).toBeLessThan(500);
      const feedback = await app.inject({ method: 'POST', url: '/api/v1/agents/feedback', headers: { authorization: intruder.keys.admin }, payload: { agid: owned.agid, plugin: 'packet_filter', hostname: 'intruder', blacklist: 3 } });
      expect(feedback.statusCode).toBe(404);
      const config = await as(`/api/v1/agents/${owned.agid}/config`);
      expect(config.statusCode).toBe(200);
      expect(config.body).toContain(owned.markers[0]);
      expect((config.json() as { running: string }).running).toBe('yes');
      const agents = (await as('/api/v1/agents')).json() as Array<{ gaid: string; active: boolean; last_checkin: number | null }>;
      expect(agents.find((a) => a.gaid === owned.agid)).toMatchObject({ active: true, last_checkin: null });
      const tokens = (await as(`/api/v1/agents/${owned.agid}/tokens`)).json() as Array<{ token_id: string; revoked: boolean }>;
      expect(tokens.find((t) => t.token_id === owned.tokenId)).toMatchObject({ revoked: false });
      const vpn = await as(`/api/v1/vpn/${owned.vid}`);
      expect(vpn.statusCode).toBe(200);
      expect(vpn.json()).toMatchObject({ vid: owned.vid, exist: true, account_name: owned.markers[1] });
      const keys = (await as('/api/v1/keys')).json() as Array<{ key_id: string; revoked_at: string | null }>;
      expect(keys.find((k) => k.key_id === owned.keyId)).toMatchObject({ revoked_at: null });
    });
  });
});
