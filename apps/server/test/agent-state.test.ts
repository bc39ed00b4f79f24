import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentState, AgentSummary, DEFAULT_AGENT_SCORE_THRESHOLD, describeAgentState, OrganizationConfig, WhyResponse, type AgentStateInput } from '@rampart/contracts';
import { listAgents } from '../src/cli/list-commands.ts';
import type { Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { agentConfig, registerAgent } from './support/agents.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/*
 * Issue 37 item 2: one definition of an agent's state (contracts agent-state.ts), the same in
 * `GET /agents`, "why" and `rampart agent list`: a revoked agent is not "alive", a deactivated
 * one is not running, a never-seen one is not "dead".
 */

describe('agentState', () => {
  const now = 1_800_000_000;
  const base: AgentStateInput = { deactivated_at: null, keys: { issued: 1, live: 1 }, running: 'yes', last_checkin: now - 60, sync_time: 5, drift_since: null };
  it('takes the first state that applies, in the documented order', () => {
    const cases: Array<[Partial<AgentStateInput>, string, number | null, boolean]> = [
      [{}, 'alive', null, true],
      [{ drift_since: now - 900 }, 'drifting', now - 900, true],
      [{ last_checkin: now - 601 }, 'silent', now - 601, false],
      [{ last_checkin: now - 600 }, 'alive', null, true],
      [{ last_checkin: null }, 'never_seen', null, false],
      [{ keys: { issued: 0, live: 0 }, last_checkin: null }, 'never_seen', null, false],
      // An agent never given an agent key checks in with an API key (`?gaid=`): alive.
      [{ keys: { issued: 0, live: 0 } }, 'alive', null, true],
      [{ running: 'no' }, 'withdrawn', null, true],
      [{ running: 'no', last_checkin: null }, 'withdrawn', null, false],
      [{ keys: { issued: 2, live: 0 } }, 'keys_revoked', null, false],
      [{ keys: { issued: 2, live: 0 }, running: 'no' }, 'keys_revoked', null, false],
      [{ deactivated_at: now - 5, keys: { issued: 2, live: 0 }, running: 'no' }, 'deactivated', now - 5, false],
    ];
    for (const [change, state, since, alive] of cases) expect(agentState({ ...base, ...change }, now), JSON.stringify(change)).toEqual({ state, since, alive });
  });
  it('describes a state in words with its time in ISO 8601 UTC', () => {
    expect(describeAgentState({ state: 'silent', since: 1_767_323_045 })).toBe('silent since 2026-01-02T03:04:05.000Z');
    expect(describeAgentState({ state: 'withdrawn', since: null })).toBe('withdrawn (running: no)');
  });
});

describe.each(driverCases())('agent states through the API, why and the CLI on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  const gaids: Record<string, string> = {};

  const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) =>
    app.inject({ method, url: `/api/v1${url}`, headers: { authorization: acme.keys.admin }, ...(payload ? { payload } : {}) });

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { name: 'State Acme', credits: 100_000 });
    const checkIn = async (token: string) => expect((await app.inject({ url: '/api/v1/ipv4/500', headers: { authorization: token } })).statusCode).toBe(200);

    const alive = await registerAgent(app, acme.keys.admin, { sync_time: 5 });
    await checkIn(alive.token);
    gaids.alive = alive.gaid;

    gaids.never_seen = (await registerAgent(app, acme.keys.admin)).gaid;
    // Registered without any key: not seen either.
    const keyless = agentConfig();
    expect((await api('POST', '/agents', keyless)).statusCode).toBe(201);
    gaids.keyless = keyless.gaid;

    const silent = await registerAgent(app, acme.keys.admin, { sync_time: 5 });
    await checkIn(silent.token);
    await sqlOf(store).query(`update agents set last_checkin_at = now() - interval '11 minutes' where gaid = $1`, [silent.gaid]);
    gaids.silent = silent.gaid;

    const revoked = await registerAgent(app, acme.keys.admin);
    await checkIn(revoked.token);
    expect((await api('DELETE', `/agents/${revoked.gaid}/tokens/${revoked.tokenId}`)).statusCode).toBe(200);
    gaids.keys_revoked = revoked.gaid;

    const withdrawn = await registerAgent(app, acme.keys.admin);
    await checkIn(withdrawn.token);
    const doc = (await api('GET', `/agents/${withdrawn.gaid}/config`)).json() as Record<string, unknown>;
    expect((await api('PUT', `/agents/${withdrawn.gaid}/config`, { ...doc, running: 'no' })).statusCode).toBe(200);
    gaids.withdrawn = withdrawn.gaid;

    const deactivated = await registerAgent(app, acme.keys.admin);
    await checkIn(deactivated.token);
    expect((await api('DELETE', `/agents/${deactivated.gaid}`)).statusCode).toBe(200);
    gaids.deactivated = deactivated.gaid;

    // A read-back that has disagreed with the server's list for an hour (agent-drift.test.ts).
    const drifting = await registerAgent(app, acme.keys.admin, { sync_time: 1 });
    const fed = await app.inject({
      method: 'POST',
      url: '/api/v1/agents/feedback',
      headers: { authorization: drifting.token },
      payload: { agid: drifting.gaid, plugin: 'packet_filter', code: 0, blacklist: 0, held: 3, reconcile_seconds: 30 },
    });
    expect(fed.statusCode, fed.body).toBe(200);
    await sqlOf(store).query(
      `update agents set enforced = jsonb_set(enforced, '{packet_filter,attestation,drift_since}', to_jsonb((enforced #>> '{packet_filter,attestation,drift_since}')::bigint - 3600)) where gaid = $1`,
      [drifting.gaid],
    );
    gaids.drifting = drifting.gaid;
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('gives each agent its one state in GET /agents, the same in why and in rampart agent list', async () => {
    const listed = z.array(AgentSummary).parse((await api('GET', '/agents')).json());
    const byGaid = new Map(listed.map((a) => [a.gaid, a]));
    const expected: Record<string, [string, boolean, number]> = {
      alive: ['alive', true, 1],
      never_seen: ['never_seen', false, 1],
      keyless: ['never_seen', false, 0],
      silent: ['silent', false, 1],
      keys_revoked: ['keys_revoked', false, 0],
      withdrawn: ['withdrawn', true, 1],
      deactivated: ['deactivated', false, 0],
      drifting: ['drifting', true, 1],
    };
    for (const [name, [state, alive, liveKeys]] of Object.entries(expected)) {
      const a = byGaid.get(gaids[name]!)!;
      expect([a.state, a.alive, a.live_keys], name).toEqual([state, alive, liveKeys]);
    }
    const silent = byGaid.get(gaids.silent!)!;
    expect(silent.state_since).toBe(silent.last_checkin);
    expect(byGaid.get(gaids.drifting!)!.state_since).toBe(byGaid.get(gaids.drifting!)!.drift_since);
    expect(byGaid.get(gaids.deactivated!)!.state_since).toBeTypeOf('number');

    // "why" names every active agent with the same state.
    const why = WhyResponse.parse((await api('GET', '/why?kind=ipv4&value=45.77.1.1')).json());
    const whyStates = Object.fromEntries(why.agents.map((a) => [a.gaid, [a.state, a.alive]]));
    for (const a of listed.filter((x) => x.state !== 'deactivated')) expect(whyStates[a.gaid], a.gaid).toEqual([a.state, a.alive]);
    expect(whyStates[gaids.deactivated!]).toBeUndefined();

    // The CLI lists the same states, times in ISO 8601 UTC.
    const rows = await listAgents(store, acme.org.gid);
    for (const a of listed) {
      const row = rows.find((r) => r.gaid === a.gaid)!;
      expect([row.state, row.state_since, row.live_keys, row.version], a.gaid).toEqual([a.state, a.state_since === null ? null : new Date(a.state_since * 1000).toISOString(), a.live_keys, a.version]);
    }
  });

  it("keeps the organization's default threshold for new agents, 150 unless set, refusing a bad one by name", async () => {
    const before = OrganizationConfig.parse((await api('GET', '/organization/config')).json());
    expect(before.agent_defaults).toEqual({ score_threshold: DEFAULT_AGENT_SCORE_THRESHOLD });
    expect(DEFAULT_AGENT_SCORE_THRESHOLD).toBe(before.live.critical_score[0]);
    expect((await api('PUT', '/organization/config', { ...before, agent_defaults: { score_threshold: 80 } })).statusCode).toBe(200);
    expect(OrganizationConfig.parse((await api('GET', '/organization/config')).json()).agent_defaults).toEqual({ score_threshold: 80 });
    for (const bad of [1001, -1, 'high', 1.5]) {
      const res = await api('PUT', '/organization/config', { ...before, agent_defaults: { score_threshold: bad } });
      expect(res.statusCode, String(bad)).toBe(400);
      expect((res.json() as { errors: Array<{ path: string }> }).errors.map((e) => e.path)).toEqual(['body.agent_defaults.score_threshold']);
    }
  });
});
