import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentSummary, SECRET_MASK } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { agentConfig, registerAgent } from './support/agents.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

describe.each(driverCases())('agents on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { name: 'Acme agents' });
    other = await seedOrg(store, { name: 'Other agents' });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const post = (key: string, payload: unknown) => app.inject({ method: 'POST', url: '/api/v1/agents', headers: { authorization: key }, payload: payload as object });

  it('registers an agent with 201, refuses a second registration of its gaid with 409', async () => {
    const config = agentConfig();
    const res = await post(acme.keys.admin, config);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ success: true, message: 'agent created successfully', agent_id: config.gaid });

    const again = await post(other.keys.admin, config);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ status: 409, type: 'https://rampart.dev/problems/conflict' });
  });

  it('answers 400 naming every failing path of a bad configuration', async () => {
    const res = await post(acme.keys.admin, { ...agentConfig(), gaid: 'AGENT-1', score_threshold: 1001, proxy: 'NONE', sync_time: 0, surprise: 1 });
    expect(res.statusCode).toBe(400);
    const paths = (res.json().errors as { path: string }[]).map((e) => e.path).sort();
    expect(paths).toEqual(['body.gaid', 'body.proxy', 'body.score_threshold', 'body.sync_time']);
  });

  it('lets only admins register and list agents', async () => {
    expect((await post(acme.keys.contributor, agentConfig())).statusCode).toBe(403);
    expect((await app.inject({ url: '/api/v1/agents', headers: { authorization: acme.keys.reader } })).statusCode).toBe(403);
  });

  it("lists the organization's agents with liveness and what they enforce; other organizations see none of them", async () => {
    const org = await seedOrg(store, { name: 'List org' });
    const quiet = await registerAgent(app, org.keys.admin, { sync_time: 1 });
    const busy = await registerAgent(app, org.keys.admin, { sync_time: 10 });
    const feedback = await app.inject({
      method: 'POST',
      url: '/api/v1/agents/feedback',
      headers: { authorization: busy.token },
      payload: { agid: busy.gaid, plugin: 'packet_filter', hostname: 'fw-1', code: 0, score_threshold: '400', blacklist: ['198.51.100.1', '198.51.100.0/24'] },
    });
    expect(feedback.statusCode).toBe(200);
    expect(feedback.body).toBe('');

    const res = await app.inject({ url: '/api/v1/agents', headers: { authorization: org.keys.admin } });
    expect(res.statusCode).toBe(200);
    const list = res.json() as AgentSummary[];
    expect(list.map((a) => a.gaid).sort()).toEqual([quiet.gaid, busy.gaid].sort());
    const b = list.find((a) => a.gaid === busy.gaid)!;
    expect(b).toMatchObject({ alive: true, active: true, running: 'yes', version: 'v3.2.1', sync_time: 10, last_checkin_via: 'feedback', hostname: 'fw-1', settings_version: 1 });
    expect(Math.abs(b.last_checkin! - Date.now() / 1000)).toBeLessThan(60);
    expect(b.enforced).toEqual({ packet_filter: { enforced: 2, code: 0, score_threshold: 400, healthy: null, state: null, error: null, at: expect.any(Number), expected: null, held: null, held_digest: null, listed: null, server_expected: null, cut: null, drift_since: null, drifting: false, last_drift: null } });
    // An agent that reported no state (an older one) is neither ok nor failed.
    expect([b.status, b.capabilities]).toEqual(['unknown', null]);
    const q = list.find((a) => a.gaid === quiet.gaid)!;
    expect(q).toMatchObject({ alive: false, last_checkin: null, last_checkin_via: null, enforced: {}, status: 'unknown', capabilities: null });

    const foreign = await app.inject({ url: '/api/v1/agents', headers: { authorization: other.keys.admin } });
    expect((foreign.json() as AgentSummary[]).map((a) => a.gaid)).not.toContain(busy.gaid);
  });

  it("keeps what the agent can run and each enforcer's state; a refused setting makes it failed until the setting is off", async () => {
    const org = await seedOrg(store, { name: 'Capable org' });
    const ips = { csv: { active: true, csv_logs: '/var/lib/rampart/list.csv' }, dns_e: { active: true } };
    const agent = await registerAgent(app, org.keys.admin, { ips });
    const capabilities = { version: 'v0.1.0', enforcers: ['csv', 'dry_run', 'packet_filter'], sources: ['ssh_log'], kinds: ['ipv4'] };
    const feedback = (payload: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: '/api/v1/agents/feedback', headers: { authorization: agent.token }, payload: { agid: agent.gaid, ...payload } });
    const summary = async () => ((await app.inject({ url: '/api/v1/agents', headers: { authorization: org.keys.admin } })).json() as AgentSummary[])[0]!;

    expect((await feedback({ plugin: 'csv', code: 0, blacklist: 12, state: 'ok', capabilities })).statusCode).toBe(200);
    expect(await summary()).toMatchObject({ status: 'ok', capabilities });
    const refusal = "no enforcer for 'dns_e'; known enforcers: csv, dry_run, packet_filter";
    expect((await feedback({ plugin: 'dns_e', code: 'refused: no_plugin', blacklist: 0, state: 'failed', error: refusal, capabilities })).statusCode).toBe(200);
    const refused = await summary();
    expect(refused.status).toBe('failed');
    expect(refused.enforced.dns_e).toEqual({ enforced: 0, code: 'refused: no_plugin', score_threshold: null, healthy: false, state: 'failed', error: refusal, at: expect.any(Number), expected: null, held: null, held_digest: null, listed: null, server_expected: null, cut: null, drift_since: null, drifting: false, last_drift: null });
    expect((await feedback({ plugin: 'csv', code: 'degraded', blacklist: 12, state: 'degraded' })).statusCode).toBe(200);
    expect((await summary()).status).toBe('failed');

    // The setting turned off: its stale entry stays on record but no longer counts.
    const doc = (await app.inject({ url: `/api/v1/agents/${agent.gaid}/config`, headers: { authorization: org.keys.admin } })).json() as Record<string, unknown>;
    const put = await app.inject({
      method: 'PUT',
      url: `/api/v1/agents/${agent.gaid}/config`,
      headers: { authorization: org.keys.admin },
      payload: { ...doc, ips: { ...(doc.ips as object), dns_e: { ...(doc.ips as Record<string, object | undefined>).dns_e, active: false } } },
    });
    expect(put.statusCode).toBe(200);
    expect(await summary()).toMatchObject({ status: 'degraded', capabilities, enforced: { dns_e: { state: 'failed' }, csv: { state: 'degraded' } } });
    expect((await feedback({ plugin: 'csv', code: 0, blacklist: 12, state: 'ok' })).statusCode).toBe(200);
    expect((await summary()).status).toBe('ok');
  });

  it('refuses feedback whose state is not ok, degraded or failed, naming the field', async () => {
    const org = await seedOrg(store, { name: 'State org' });
    const agent = await registerAgent(app, org.keys.admin);
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/agents/feedback',
      headers: { authorization: agent.token },
      payload: { agid: agent.gaid, plugin: 'csv', state: 'broken' },
    });
    expect(res.statusCode).toBe(400);
    expect((res.json().errors as { path: string }[]).map((e) => e.path)).toEqual(['body.state']);
  });

  it('counts an agent dead once its last check-in is older than 2 x sync_time', async () => {
    const org = await seedOrg(store, { name: 'Dead org' });
    const a = await registerAgent(app, org.keys.admin, { sync_time: 1 });
    expect(await store.agents.checkIn(org.org.id, a.gaid, 'ipv4')).toBe(true);
    await sqlOf(store).query("update agents set last_checkin_at = now() - interval '121 seconds' where gaid = $1", [a.gaid]);
    const list = (await app.inject({ url: '/api/v1/agents', headers: { authorization: org.keys.admin } })).json() as AgentSummary[];
    expect(list[0]).toMatchObject({ gaid: a.gaid, alive: false, last_checkin_via: 'ipv4' });
    await sqlOf(store).query("update agents set last_checkin_at = now() - interval '119 seconds' where gaid = $1", [a.gaid]);
    const again = (await app.inject({ url: '/api/v1/agents', headers: { authorization: org.keys.admin } })).json() as AgentSummary[];
    expect(again[0]!.alive).toBe(true);
  });

  it('refuses feedback for an unknown agent, another agent, or another organization', async () => {
    const mine = await registerAgent(app, acme.keys.admin);
    const theirs = await registerAgent(app, other.keys.admin);
    const send = (authorization: string, agid: string) =>
      app.inject({ method: 'POST', url: '/api/v1/agents/feedback', headers: { authorization }, payload: { agid, plugin: 'packet_filter', blacklist: 3 } });
    expect((await send(mine.token, theirs.gaid)).statusCode).toBe(403);
    expect((await send(acme.keys.admin, theirs.gaid)).statusCode).toBe(404);
    expect((await send(acme.keys.admin, 'RMP-AGENT-ID-NOPE')).statusCode).toBe(404);
    expect((await send(acme.keys.contributor, mine.gaid)).statusCode).toBe(200);
    expect((await send(acme.keys.reader, mine.gaid)).statusCode).toBe(403);
  });
});
