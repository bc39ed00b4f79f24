import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.ts';
import { registerAgent } from './support/agents.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { driverCases } from './support/databases.ts';

const BASE = '/api/v1/crowdsec/v1';

/** An alert as crowdsec 1.4.6 pushes it (fields it sends and Rampart does not use included). */
function alert(ip: string, overrides: Record<string, unknown> = {}) {
  const events = Array.from({ length: 6 }, (_, i) => ({
    meta: [
      { key: 'log_type', value: 'ssh_failed-auth' },
      { key: 'service', value: 'ssh' },
      { key: 'source_ip', value: ip },
      { key: 'target_user', value: `user${i}` },
    ],
    timestamp: `2025-03-01T00:0${i}:00Z`,
  }));
  return {
    capacity: 5,
    decisions: null,
    events,
    events_count: 6,
    labels: null,
    leakspeed: '10s',
    message: `Ip ${ip} performed 'crowdsecurity/ssh-bf' (6 events over 5m0s) at 2025-03-01 00:05:00 +0000 UTC`,
    remediation: true,
    scenario: 'crowdsecurity/ssh-bf',
    scenario_hash: '4441dcff07020f6690d998b7101e642359ba405c2abb83565bbbdcee36de280f',
    scenario_version: '0.1',
    simulated: false,
    source: { ip, range: '', scope: 'Ip', value: ip },
    start_at: '2025-03-01T00:00:00Z',
    stop_at: '2025-03-01T00:05:00Z',
    ...overrides,
  };
}

describe.each(driverCases())('CrowdSec watchers (v1/watchers, v1/alerts, v1/heartbeat) on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { name: `Acme watchers ${driver.name}` });
  }, 180_000);
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const post = (url: string, payload: unknown, headers: Record<string, string> = {}) => app.inject({ method: 'POST', url: `${BASE}${url}`, payload: payload as object, headers });
  const lookUp = async (ip: string) => {
    const res = await app.inject({ url: `/api/v1/ips/${ip}?full=yes`, headers: { authorization: acme.keys.reader } });
    expect(res.statusCode).toBe(200);
    return (res.json() as { body: Array<{ ip: string; ts: number; info: { sources: string[]; notes: string[]; events: number } }> }).body;
  };
  async function login(agent: { gaid: string; token: string }): Promise<string> {
    const res = await post('/watchers/login', { machine_id: agent.gaid, password: agent.token, scenarios: ['crowdsecurity/ssh-bf'] });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { token: string }).token;
  }

  it('logs an agent in with its gaid and key, and answers a token for an hour in LAPI shape', async () => {
    const agent = await registerAgent(app, acme.keys.admin);
    const before = Math.floor(Date.now() / 1000);
    const res = await post('/watchers/login', { machine_id: agent.gaid, password: agent.token, scenarios: ['crowdsecurity/ssh-bf', 'crowdsecurity/ssh-slow-bf'] });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { code: number; expire: string; token: string };
    expect(Object.keys(body).sort()).toEqual(['code', 'expire', 'token']);
    expect(body.code).toBe(200);
    expect(body.expire).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const expire = Date.parse(body.expire) / 1000;
    expect(expire).toBeGreaterThanOrEqual(before + 3600);
    expect(expire).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600);
    // The token is not an agent key: the agent routes refuse it.
    expect((await app.inject({ url: '/api/v1/ips?ts=0', headers: { authorization: `Bearer ${body.token}` } })).statusCode).toBe(401);
  });

  it('refuses a login whose machine_id is not the agent of the key, a wrong key and a revoked one, with LAPI message', async () => {
    const [a, b] = [await registerAgent(app, acme.keys.admin), await registerAgent(app, acme.keys.admin)];
    const crossed = await post('/watchers/login', { machine_id: b.gaid, password: a.token });
    expect(crossed.statusCode).toBe(401);
    expect(crossed.json()).toMatchObject({ type: expect.stringContaining('unauthorized'), message: expect.stringContaining('machine_id') });
    const wrong = await post('/watchers/login', { machine_id: a.gaid, password: `${a.token.slice(0, -4)}AAAA` });
    expect(wrong.statusCode).toBe(401);
    const notKey = await post('/watchers/login', { machine_id: a.gaid, password: 'Xe4FSqCfKjBmDKmmRLfhQ8rqJzv9p6ea' });
    expect(notKey.statusCode).toBe(401);
    expect(notKey.json().message).toBe(notKey.json().detail);
    const missing = await post('/watchers/login', { machine_id: a.gaid });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors[0].path).toBe('body.password');

    const revoke = await app.inject({ method: 'DELETE', url: `/api/v1/agents/${a.gaid}/tokens/${a.tokenId}`, headers: { authorization: acme.keys.admin } });
    expect(revoke.statusCode).toBe(200);
    expect((await post('/watchers/login', { machine_id: a.gaid, password: a.token })).statusCode).toBe(401);
  });

  it('accepts a registration only for a registered agent with one of its keys (pre-authorized), refuses any other', async () => {
    const agent = await registerAgent(app, acme.keys.admin);
    expect((await post('/watchers', { machine_id: agent.gaid, password: agent.token })).statusCode).toBe(201);
    const stranger = await post('/watchers', { machine_id: 'cscli-generated-3d1219c7c4c5404a', password: 'Xe4FSqCfKjBmDKmmRLfhQ8rqJzv9p6ea' });
    expect(stranger.statusCode).toBe(401);
    expect(stranger.json().message).toContain('agent key');
  });

  it('answers a heartbeat with the token only, and counts it as the agent check-in', async () => {
    const agent = await registerAgent(app, acme.keys.admin);
    expect((await app.inject({ url: `${BASE}/heartbeat` })).statusCode).toBe(401);
    expect((await app.inject({ url: `${BASE}/heartbeat`, headers: { authorization: `Bearer ${agent.token}` } })).statusCode).toBe(401);
    const token = await login(agent);
    const beat = await app.inject({ url: `${BASE}/heartbeat`, headers: { authorization: `Bearer ${token}` } });
    expect(beat.statusCode).toBe(200);
    expect(beat.body).toBe('');
    const agents = (await app.inject({ url: '/api/v1/agents', headers: { authorization: acme.keys.admin } })).json() as Array<{ gaid: string; last_checkin_via: string | null }>;
    expect(agents.find((a) => a.gaid === agent.gaid)?.last_checkin_via).toBe('crowdsec_watcher');
  });

  it('stores each alert as a report of the organization (source and confidence from the scenario), answering one id per alert', async () => {
    const agent = await registerAgent(app, acme.keys.admin);
    const token = await login(agent);
    const started = Math.floor(Date.now() / 1000);
    const res = await post(
      '/alerts',
      [
        alert('45.77.113.11'),
        alert('45.77.113.11', { scenario: 'crowdsecurity/ssh-slow-bf', capacity: 10, events_count: 11 }),
        alert('185.220.101.0/24', { source: { scope: 'Range', value: '185.220.101.0/24', range: '185.220.101.0/24' }, scenario: 'crowdsecurity/http-probing', capacity: 10, events_count: 22 }),
      ],
      { authorization: `Bearer ${token}` },
    );
    expect(res.statusCode, res.body).toBe(201);
    const ids = res.json() as string[];
    expect(ids).toHaveLength(3);
    for (const id of ids) expect(id).toMatch(/^[1-9]\d*$/);
    expect(ids[0]).toBe(ids[1]);
    expect(ids[2]).not.toBe(ids[0]);

    const [single] = await lookUp('45.77.113.11');
    expect(single).toMatchObject({ ip: '45.77.113.11', info: { sources: ['ssh_log'], events: 2 } });
    // A replayed old log is reported now: the record's time is the arrival, not the alert's start_at.
    expect(single!.ts).toBeGreaterThanOrEqual(started);
    expect(single!.info.notes).toContain(`crowdsec crowdsecurity/ssh-bf on ${agent.gaid}: 6 events from 2025-03-01T00:00:00Z to 2025-03-01T00:05:00Z`);
    const network = (await lookUp('185.220.101.9')).find((r) => r.ip === '185.220.101.0/24');
    expect(network).toMatchObject({ info: { sources: ['waf_log'], events: 1 } });
    // The organization's confidence is the latest alert's: ssh-slow-bf at exactly its overflow (0.7).
    expect(await store.ipv4.reporters(Number(ids[0]))).toEqual([{ org_id: acme.org.id, trust: 0.5, confidence: 0.7, events: 2 }]);
    // 22 events of a scenario of capacity 10 (two overflows' worth) at severity 0.6: 1 - 0.4^2.
    expect(await store.ipv4.reporters(Number(ids[2]))).toEqual([{ org_id: acme.org.id, trust: 0.5, confidence: 0.84, events: 1 }]);
  });

  it('stores nothing of a push with one alert it refuses, and names that alert', async () => {
    const agent = await registerAgent(app, acme.keys.admin);
    const token = await login(agent);
    const auth = { authorization: `Bearer ${token}` };
    const cases: Array<[unknown, number, string, string]> = [
      [alert('10.1.2.3'), 400, 'non_public_address', 'body.1.source.value'],
      [alert('2001:db8::1', { source: { scope: 'Ip', value: '2001:db8::1', ip: '2001:db8::1' } }), 400, 'validation_failed', 'body.1.source.value'],
      [alert('45.77.114.1', { source: { scope: 'Country', value: 'FR' } }), 400, 'validation_failed', 'body.1.source.scope'],
      [alert('45.77.114.1', { source: { scope: 'Ip', value: '45.77.114.300' } }), 400, 'validation_failed', 'body.1.source.value'],
      [alert('45.77.114.1', { scenario: undefined }), 400, 'validation_failed', 'body.1.scenario'],
      [alert('45.77.114.1', { events_count: 'six' }), 400, 'validation_failed', 'body.1.events_count'],
    ];
    for (const [bad, status, code, path] of cases) {
      const res = await post('/alerts', [alert('45.77.114.7'), bad], auth);
      expect(res.statusCode, res.body).toBe(status);
      const problem = res.json() as { type: string; errors: Array<{ path: string }>; message: string };
      expect(problem.type).toMatch(new RegExp(`${code}$`));
      expect(problem.errors.map((e) => e.path)).toContain(path);
      expect(problem.message).toContain(path);
      expect(await lookUp('45.77.114.7')).toEqual([]);
    }
    expect((await post('/alerts', [], auth)).statusCode).toBe(400);
    expect((await post('/alerts', [alert('45.77.114.7')])).statusCode).toBe(401);
  });

  it('refuses, storing none, a push naming an address the organization reserved (rolled back in the transaction)', async () => {
    const org = await seedOrg(store, { name: `Reserving watchers ${driver.name}` });
    const doc = (await app.inject({ url: '/api/v1/organization/config', headers: { authorization: org.keys.admin } })).json() as Record<string, unknown>;
    const put = await app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: org.keys.admin }, payload: { ...doc, reserved_ips: ['45.77.115.0/24'] } });
    expect(put.statusCode).toBe(200);
    const agent = await registerAgent(app, org.keys.admin);
    const token = await login(agent);
    const res = await post('/alerts', [alert('45.77.116.8'), alert('45.77.115.9'), alert('45.77.115.10')], { authorization: `Bearer ${token}` });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ reserved_range: '45.77.115.0/24', errors: [{ path: 'body.1.source.value' }] });
    const held = await app.inject({ url: '/api/v1/ips/45.77.116.8', headers: { authorization: org.keys.reader } });
    expect(held.json().body).toEqual([]);
  });

  it('ends the watcher token when its agent key is revoked', async () => {
    const agent = await registerAgent(app, acme.keys.admin);
    const token = await login(agent);
    const auth = { authorization: `Bearer ${token}` };
    expect((await app.inject({ url: `${BASE}/heartbeat`, headers: auth })).statusCode).toBe(200);
    await app.inject({ method: 'DELETE', url: `/api/v1/agents/${agent.gaid}/tokens/${agent.tokenId}`, headers: { authorization: acme.keys.admin } });
    const refused = await post('/alerts', [alert('45.77.117.1')], auth);
    expect(refused.statusCode).toBe(401);
    expect(refused.json().message).toContain('revoked');
    expect(await lookUp('45.77.117.1')).toEqual([]);
  });

  it('charges the report price once per alert, and nothing for a refused push', async () => {
    const priced = await testApp(store, { coinPrices: { lookup: 1, deep_scan: 5, feed: 1, list: 2, report: 2, decision: 0, tool: 1, stix: 1, vpn: 10 } });
    try {
      const org = await seedOrg(store, { name: `Paying watchers ${driver.name}`, credits: 100 });
      const agent = await registerAgent(priced, org.keys.admin);
      const login = await priced.inject({ method: 'POST', url: `${BASE}/watchers/login`, payload: { machine_id: agent.gaid, password: agent.token } });
      const auth = { authorization: `Bearer ${(login.json() as { token: string }).token}` };
      const push = (alerts: unknown[]) => priced.inject({ method: 'POST', url: `${BASE}/alerts`, payload: alerts as object, headers: auth });
      const paid = await push([alert('45.77.118.1'), alert('45.77.118.2'), alert('45.77.118.3')]);
      expect(paid.statusCode).toBe(201);
      expect(paid.headers['x-coins-cost']).toBe('6');
      expect(paid.headers['x-coins-remaining']).toBe('94');
      const refused = await push([alert('45.77.118.4'), alert('192.168.1.1')]);
      expect(refused.statusCode).toBe(400);
      expect(refused.headers['x-coins-cost']).toBe('0');
      expect(refused.headers['x-coins-remaining']).toBe('94');
    } finally {
      await priced.close();
    }
  });
});
