import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrowdsecDecision, CrowdsecStream, OrganizationConfig } from '@rampart/contracts';
import { lastSecondAtOrAbove } from '@rampart/scoring';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { registerAgent } from './support/agents.ts';

/*
 * The bouncer side of CrowdSec's Local API (issue 32 item 1) over the real app and store: an
 * agent key in X-Api-Key gets that agent's list (`/ipv4/{score_threshold}` for the same key at
 * the same moment), in a stream with a cursor per key, with LAPI's decision objects, and every
 * call is the agent's check-in. The real bouncer runs against it in
 * crowdsec-firewall-bouncer.test.ts.
 */

const BASE = '/api/v1/crowdsec/v1';

describe.each(driverCases())('CrowdSec bouncer API on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let agent: Awaited<ReturnType<typeof registerAgent>>;
  const THRESHOLD = 20;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 1_000_000, trust: 1 });
    agent = await registerAgent(app, acme.keys.admin, { score_threshold: THRESHOLD });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const stream = async (key: string, startup: boolean, query = '') => {
    const res = await app.inject({ url: `${BASE}/decisions/stream?startup=${startup}${query}`, headers: { 'x-api-key': key } });
    expect(res.statusCode, res.body).toBe(200);
    return CrowdsecStream.parse(res.json());
  };
  const report = async (ip: string, extra: Record<string, unknown> = {}) => {
    const res = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: acme.keys.contributor }, payload: { ip, confidence: 1, source: 'ssh_log', ...extra } });
    expect(res.statusCode, res.body).toBeLessThan(300);
  };
  /** `/ipv4/{threshold}` for the agent's own key, sorted. */
  const listed = async (key = agent.token, threshold = THRESHOLD) => {
    const res = await app.inject({ url: `/api/v1/ipv4/${threshold}`, headers: { authorization: key } });
    expect(res.statusCode, res.body).toBe(200);
    return res.body.split('\n').filter(Boolean).sort();
  };
  /** What a bouncer holds after applying answers in order: deleted first, then new (skipping held values). */
  const apply = (held: Map<string, CrowdsecDecision>, answer: CrowdsecStream) => {
    for (const d of answer.deleted) held.delete(d.value);
    for (const d of answer.new) if (!held.has(d.value)) held.set(d.value, d);
    return held;
  };
  const values = (held: Map<string, CrowdsecDecision>) => [...held.keys()].sort();
  const durationSeconds = (d: string) => {
    const m = /^(?:(\d+)h)?(?:(\d+)m)?(\d+)s$/.exec(d);
    expect(m, d).not.toBeNull();
    return Number(m![1] ?? 0) * 3600 + Number(m![2] ?? 0) * 60 + Number(m![3]);
  };

  it('refuses a missing, malformed, unknown or revoked key with 403, and a user API key too', async () => {
    const other = await registerAgent(app, acme.keys.admin, { score_threshold: THRESHOLD });
    const forged = `${other.token.slice(0, -4)}AAAA`;
    for (const headers of [{}, { 'x-api-key': 'not-a-key' }, { 'x-api-key': forged }, { 'x-api-key': acme.keys.admin }, { authorization: other.token }]) {
      const res = await app.inject({ url: `${BASE}/decisions/stream?startup=true`, headers });
      expect(res.statusCode, JSON.stringify(headers)).toBe(403);
      expect(res.headers['content-type']).toContain('application/problem+json');
    }
    expect((await app.inject({ method: 'HEAD', url: `${BASE}/decisions`, headers: { 'x-api-key': other.token } })).statusCode).toBe(200);
    const revoked = await app.inject({ method: 'DELETE', url: `/api/v1/agents/${other.gaid}/tokens/${other.tokenId}`, headers: { authorization: acme.keys.admin } });
    expect(revoked.statusCode, revoked.body).toBeLessThan(300);
    for (const method of ['GET', 'HEAD'] as const) {
      expect((await app.inject({ method, url: `${BASE}/decisions`, headers: { 'x-api-key': other.token } })).statusCode).toBe(403);
    }
    // The key in X-Api-Key opens only the bouncer routes.
    expect((await app.inject({ url: '/api/v1/ipv4/20', headers: { 'x-api-key': agent.token } })).statusCode).toBe(401);
  });

  it('streams the same set as /ipv4/{threshold}, with a cursor per key and honest durations', async () => {
    for (const ip of ['45.77.1.1', '45.77.1.2', '45.77.1.3', '45.77.9.9', '45.78.0.0/24']) await report(ip);
    // Reserved after its report: held, but never listed for this organization.
    await store.settings.replaceOrganization(acme.org.id, () => OrganizationConfig.parse({ reserved_ips: ['45.77.9.0/24'] }), 'test');
    await report('45.77.1.4', { decision: 1, ttl: Math.floor(Date.now() / 1000) + 7200 });
    await report('45.77.1.5', { decision: 1 });

    const first = await stream(agent.token, true);
    const held = apply(new Map(), first);
    expect(first.deleted).toEqual([]);
    expect(values(held)).toEqual(await listed());
    expect(values(held)).toContain('45.78.0.0/24');
    expect(values(held)).not.toContain('45.77.9.9');
    for (const d of first.new) {
      expect(d).toMatchObject({ origin: 'rampart', type: 'ban', simulated: false, scope: d.value.includes('/') ? 'Range' : 'Ip' });
      expect(d.id).toBeGreaterThan(0);
    }
    const byValue = (v: string) => first.new.find((d) => d.value === v)!;
    expect(byValue('45.77.1.1').scenario).toBe('rampart/ssh_log');
    expect(byValue('45.77.1.5').scenario).toBe('rampart/blacklist+ssh_log');
    // A blacklist without ttl: the longest duration ipset takes; with a ttl: until the ttl (or the score's end).
    expect(durationSeconds(byValue('45.77.1.5').duration)).toBe(2_147_482);
    const lookup = await app.inject({ url: '/api/v1/ips/45.77.1.1', headers: { authorization: acme.keys.reader } });
    const record = lookup.json().body[0] as { score: number; ts: number };
    const end = Number(record.ts) + lastSecondAtOrAbove(record.score, THRESHOLD) + 1;
    const left = end - Date.now() / 1000;
    expect(durationSeconds(byValue('45.77.1.1').duration)).toBeGreaterThanOrEqual(Math.floor(left));
    expect(durationSeconds(byValue('45.77.1.1').duration)).toBeLessThanOrEqual(Math.ceil(left) + 1);

    // Nothing changed: nothing sent. Another key of the same agent has its own cursor.
    expect(await stream(agent.token, false)).toEqual({ new: [], deleted: [] });
    const second = await app.inject({ method: 'POST', url: `/api/v1/agents/${agent.gaid}/token`, headers: { authorization: acme.keys.admin }, payload: {} });
    const secondKey = (second.json() as { token: string }).token;
    expect(values(apply(new Map(), await stream(secondKey, false)))).toEqual(await listed());

    // A whitelist withdraws; a new blacklist adds; a new report that extends the listing resends.
    await report('45.77.1.2', { decision: 0 });
    await report('45.79.0.1', { decision: 1, ttl: Math.floor(Date.now() / 1000) + 600 });
    await report('45.77.1.1', { confidence: 1, source: 'waf_log' });
    const next = await stream(agent.token, false);
    apply(held, next);
    expect(values(held)).toEqual(await listed());
    expect(next.deleted.map((d) => d.value).sort()).toEqual(['45.77.1.1', '45.77.1.2']);
    expect(next.new.map((d) => d.value).sort()).toEqual(['45.77.1.1', '45.79.0.1']);
    expect(next.new.find((d) => d.value === '45.77.1.1')!.scenario).toBe('rampart/ssh_log+waf_log');
    // Listed until the later of its ttl and its score's end.
    const blacklisted = next.new.find((d) => d.value === '45.79.0.1')!;
    expect(blacklisted.scenario).toBe('rampart/blacklist+ssh_log');
    expect(durationSeconds(blacklisted.duration)).toBeGreaterThan(600);

    // Start-up again: everything in new, and everything this key was sent in deleted.
    const restart = await stream(agent.token, true);
    expect(restart.deleted.map((d) => d.value).sort()).toEqual(values(held));
    expect(restart.new.map((d) => d.value).sort()).toEqual(await listed());
  });

  it('filters by scope, origin and scenario words as LAPI does', async () => {
    const key = (await registerAgent(app, acme.keys.admin, { score_threshold: THRESHOLD })).token;
    const all = (await listed(key)).length;
    const ips = await stream(key, true, '&scopes=ip');
    expect(ips.new.every((d) => d.scope === 'Ip')).toBe(true);
    expect(ips.new.length).toBe(all - 1);
    expect((await stream(key, true, '&scopes=Range')).new.map((d) => d.value)).toEqual(['45.78.0.0/24']);
    expect((await stream(key, true, '&origins=crowdsec,cscli')).new).toEqual([]);
    expect((await stream(key, true, '&origins=rampart')).new.length).toBe(all);
    expect((await stream(key, true, '&scenarios_containing=blacklist')).new.map((d) => d.value).sort()).toEqual(['45.77.1.4', '45.77.1.5', '45.79.0.1']);
    expect((await stream(key, true, '&scenarios_not_containing=blacklist,waf')).new.length).toBe(all - 4);
  });

  it('answers look-ups with the matching decisions, or null', async () => {
    const get = (query: string) => app.inject({ url: `${BASE}/decisions?${query}`, headers: { 'x-api-key': agent.token } });
    const hit = await get('ip=45.78.0.9');
    expect(hit.statusCode).toBe(200);
    expect((hit.json() as CrowdsecDecision[]).map((d) => [d.value, d.scope])).toEqual([['45.78.0.0/24', 'Range']]);
    for (const q of ['ip=45.77.1.2', 'ip=8.8.8.8', 'type=captcha', 'scope=range&value=45.77.1.1', 'range=45.78.0.0/16']) {
      const miss = await get(q);
      expect(miss.statusCode, q).toBe(200);
      expect(miss.body, q).toBe('null');
    }
    expect((await get('range=45.78.0.0/16&contains=false')).json()).toHaveLength(1);
    expect((await get('value=45.77.1.5&scope=Ip')).json()).toHaveLength(1);
    expect((await get('ip=not-an-ip')).statusCode).toBe(400);
  });

  it('records usage metrics and every call as the agent check-in (via bouncer)', async () => {
    const entries = (await listed()).length;
    expect((await app.inject({ method: 'HEAD', url: `${BASE}/decisions`, headers: { 'x-api-key': agent.token } })).statusCode).toBe(200);
    const body = { remediation_components: [{ type: 'crowdsec-firewall-bouncer', version: 'v0.0.25', metrics: [] }] };
    const res = await app.inject({ method: 'POST', url: `${BASE}/usage-metrics`, headers: { 'x-api-key': agent.token }, payload: body });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.body).toBe('');
    const cursor = await store.crowdsec.cursor(agent.tokenId);
    expect(cursor?.usageMetrics).toEqual(body);
    expect(cursor?.entries).toBe(entries);
    const agents = await app.inject({ url: '/api/v1/agents', headers: { authorization: acme.keys.admin } });
    const row = (agents.json() as Array<{ gaid: string; last_checkin_via: string | null }>).find((a) => a.gaid === agent.gaid);
    expect(row?.last_checkin_via).toBe('bouncer');
    expect((await app.inject({ method: 'POST', url: `${BASE}/usage-metrics`, headers: { 'x-api-key': agent.token }, payload: { remediation_components: 'x' } })).statusCode).toBe(400);
    // Nesting that the store's JSON cannot hold is refused before it gets there (a 500 before).
    let deep: unknown = [];
    for (let i = 0; i < 2000; i++) deep = [deep];
    const nested = await app.inject({ method: 'POST', url: `${BASE}/usage-metrics`, headers: { 'x-api-key': agent.token }, payload: { remediation_components: [{ metrics: deep }] } });
    expect(nested.statusCode, nested.body).toBe(400);
    expect((await store.crowdsec.cursor(agent.tokenId))?.usageMetrics).toEqual(body);
  });

  it("keeps the agent's maximum_rules (blacklists first, then the highest scores) and withdraws everything while running is no", async () => {
    const small = await registerAgent(app, acme.keys.admin, { score_threshold: THRESHOLD, maximum_rules: 3 });
    const first = await stream(small.token, true);
    expect(first.new.map((d) => d.value).sort()).toEqual(['45.77.1.4', '45.77.1.5', '45.79.0.1']);
    const config = { ...small.config, score_threshold: THRESHOLD, maximum_rules: 3, running: 'no' };
    const put = await app.inject({ method: 'PUT', url: `/api/v1/agents/${small.gaid}/config`, headers: { authorization: acme.keys.admin }, payload: config });
    expect(put.statusCode, put.body).toBeLessThan(300);
    const stopped = await stream(small.token, false);
    expect(stopped.new).toEqual([]);
    expect(stopped.deleted.map((d) => d.value).sort()).toEqual(['45.77.1.4', '45.77.1.5', '45.79.0.1']);
  });
});
