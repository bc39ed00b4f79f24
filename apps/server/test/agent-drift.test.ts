import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { driverCases } from './support/databases.ts';
import { registerAgent } from './support/agents.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/**
 * Attestation by read-back (issue 30): the agent says what its target holds, the server compares
 * it with its own list at the agent's threshold, capped as the agent is, and calls the agent
 * drifting once they have differed for longer than one sync interval plus one reconcile.
 */
const LISTED = ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4', '198.51.100.5'];
const digest = (members: string[]) => createHash('sha256').update(members.map((m) => `${m}/32\n`).join('')).digest('hex');

interface Summary {
  gaid: string;
  drifting: boolean;
  drift_since: number | null;
  enforced: Record<string, { last_drift: unknown; held: number | null; expected: number | null; held_digest: string | null; listed: number | null; server_expected: number | null; cut: number | null; drift_since: number | null; drifting: boolean }>;
}

describe.each(driverCases())('agent drift on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 100_000 });
    const now = Math.floor(Date.now() / 1000);
    // Five addresses listed at 500 (score 900, fresh), one below it.
    for (const [i, ip] of [...LISTED, '198.51.100.9'].entries()) {
      await sqlOf(store).query(
        `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events, sources) values ($1, $2::cidr, false, $3, $4, $4, 1, 1, '{}')`,
        [`RMP-RULE-GID-DRIFT${i}`, `${ip}/32`, ip.endsWith('.9') ? 50 : 900, now],
      );
    }
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const feedback = (token: string, payload: object) => app.inject({ method: 'POST', url: '/api/v1/agents/feedback', headers: { authorization: token }, payload });
  const summary = async (gaid: string): Promise<Summary> => {
    const listed = (await app.inject({ url: '/api/v1/agents', headers: { authorization: acme.keys.admin } })).json() as Summary[];
    return listed.find((a) => a.gaid === gaid)!;
  };
  const driftingGauge = async () => {
    const text = (await app.inject({ url: '/metrics' })).body;
    const line = text.split('\n').find((l) => l.startsWith(`rampart_agents_drifting{org="${acme.org.gid}"}`));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };
  /** The drift as the store keeps it, moved back in time: the server's clock is not ours to move. */
  const backdate = async (gaid: string, plugin: string, seconds: number) => {
    await sqlOf(store).query(
      `update agents set enforced = jsonb_set(enforced, array[$2::text, 'attestation', 'drift_since'], to_jsonb(((enforced #>> array[$2::text, 'attestation', 'drift_since'])::bigint - $3))) where gaid = $1`,
      [gaid, plugin, seconds],
    );
  };

  it('compares what the target holds with the server list: drifting after one sync interval plus one reconcile, cleared by a read-back that agrees', async () => {
    const agent = await registerAgent(app, acme.keys.admin, { sync_time: 1, score_threshold: 500 });
    const base = { agid: agent.gaid, plugin: 'packet_filter', hostname: 'fw', code: 0, score_threshold: 500, state: 'ok', reconcile_seconds: 30 };
    expect((await feedback(agent.token, { ...base, blacklist: 5, expected: 5, held: 5, held_digest: digest(LISTED) })).statusCode).toBe(200);
    let s = await summary(agent.gaid);
    expect(s.enforced.packet_filter).toEqual(expect.objectContaining({ held: 5, expected: 5, held_digest: digest(LISTED), listed: 5, server_expected: 5, cut: 0, drift_since: null, drifting: false }));
    expect([s.drifting, s.drift_since]).toEqual([false, null]);

    // Two rules deleted behind the agent's back: a mismatch at once, not yet a drift.
    const before = Math.floor(Date.now() / 1000);
    expect((await feedback(agent.token, { ...base, blacklist: 5, expected: 5, held: 3, held_digest: digest(LISTED.slice(0, 3)) })).statusCode).toBe(200);
    s = await summary(agent.gaid);
    const since = s.enforced.packet_filter!.drift_since!;
    expect(since).toBeGreaterThanOrEqual(before);
    expect(s.enforced.packet_filter).toMatchObject({ held: 3, server_expected: 5, drifting: false });
    expect(s.drifting).toBe(false);
    expect(await driftingGauge()).toBe(0);

    // Past one sync interval (60 s) plus one reconcile (30 s), still holding 3: drifting.
    await backdate(agent.gaid, 'packet_filter', 91);
    expect((await feedback(agent.token, { ...base, blacklist: 5, expected: 5, held: 3 })).statusCode).toBe(200);
    s = await summary(agent.gaid);
    expect(s.enforced.packet_filter).toMatchObject({ held: 3, server_expected: 5, drift_since: since - 91, drifting: true });
    expect([s.drifting, s.drift_since]).toEqual([true, since - 91]);
    expect(await driftingGauge()).toBe(1);

    // The agent repaired its target: the drift clears.
    expect((await feedback(agent.token, { ...base, blacklist: 5, expected: 5, held: 5, held_digest: digest(LISTED) })).statusCode).toBe(200);
    s = await summary(agent.gaid);
    expect(s.enforced.packet_filter).toMatchObject({ held: 5, drift_since: null, drifting: false, last_drift: { since: since - 91, until: expect.any(Number), held: 3, server_expected: 5 } });
    expect([s.drifting, s.drift_since]).toEqual([false, null]);
    expect(await driftingGauge()).toBe(0);
  });

  it('shows what maximum_rules and the enforcer capacity cut, not a drift', async () => {
    const capped = await registerAgent(app, acme.keys.admin, { sync_time: 1, score_threshold: 500, maximum_rules: 3 });
    expect((await feedback(capped.token, { agid: capped.gaid, plugin: 'packet_filter', code: 0, blacklist: 3, expected: 3, held: 3 })).statusCode).toBe(200);
    expect((await summary(capped.gaid)).enforced.packet_filter).toMatchObject({ listed: 5, server_expected: 3, cut: 2, held: 3, drift_since: null, drifting: false });

    const small = await registerAgent(app, acme.keys.admin, { sync_time: 1, score_threshold: 500 });
    expect((await feedback(small.token, { agid: small.gaid, plugin: 'router_a', code: 0, blacklist: 2, expected: 2, held: 2, capacity: 2, cut: 3 })).statusCode).toBe(200);
    expect((await summary(small.gaid)).enforced.router_a).toMatchObject({ listed: 5, server_expected: 2, cut: 3, drift_since: null });
    // Holding more than the cap allows is a drift as much as holding less.
    expect((await feedback(capped.token, { agid: capped.gaid, plugin: 'packet_filter', code: 0, blacklist: 3, expected: 3, held: 5 })).statusCode).toBe(200);
    expect((await summary(capped.gaid)).enforced.packet_filter!.drift_since).not.toBeNull();
  });

  it('expects what the threshold lists and the never-block list leaves, and nothing of an agent told not to run', async () => {
    const strict = await registerAgent(app, acme.keys.admin, { sync_time: 1, score_threshold: 10 });
    expect((await feedback(strict.token, { agid: strict.gaid, plugin: 'packet_filter', code: 0, blacklist: 5, held: 5, protected: 1 })).statusCode).toBe(200);
    expect((await summary(strict.gaid)).enforced.packet_filter).toMatchObject({ listed: 6, server_expected: 5, cut: 0, drift_since: null });

    const stopped = await registerAgent(app, acme.keys.admin, { sync_time: 1, score_threshold: 500 });
    const doc = (await app.inject({ url: `/api/v1/agents/${stopped.gaid}/config`, headers: { authorization: acme.keys.admin } })).json();
    expect((await app.inject({ method: 'PUT', url: `/api/v1/agents/${stopped.gaid}/config`, headers: { authorization: acme.keys.admin }, payload: { ...doc, running: 'no' } })).statusCode).toBe(200);
    expect((await feedback(stopped.token, { agid: stopped.gaid, plugin: 'packet_filter', code: 0, blacklist: 0, held: 0 })).statusCode).toBe(200);
    expect((await summary(stopped.gaid)).enforced.packet_filter).toMatchObject({ listed: 5, server_expected: 0, drift_since: null });
  });

  it('compares a domain or URL enforcer with the score list of its kind, and records a file-digest one without a comparison', async () => {
    const now = Math.floor(Date.now() / 1000);
    // Three domains listed at 500 (score 900, fresh), one below; two URLs listed.
    for (const [value, score] of [['a.drift.example', 900], ['b.drift.example', 900], ['c.drift.example', 900], ['d.drift.example', 50]] as const) {
      await sqlOf(store).query('insert into domain_indicators (value, score, ts, entry_ts) values ($1, $2, $3, $3)', [value, score, now]);
    }
    for (const value of ['http://drift.example/a', 'http://drift.example/b']) await sqlOf(store).query('insert into url_indicators (value, score, ts, entry_ts) values ($1, 900, $2, $2)', [value, now]);
    const agent = await registerAgent(app, acme.keys.admin, { sync_time: 1, score_threshold: 500 });
    const base = { agid: agent.gaid, hostname: 'dns', code: 0, score_threshold: 500, state: 'ok' };
    expect((await feedback(agent.token, { ...base, plugin: 'csv/domain', blacklist: 3, expected: 3, held: 3 })).statusCode).toBe(200);
    expect((await feedback(agent.token, { ...base, plugin: 'csv/url', blacklist: 2, expected: 2, held: 1 })).statusCode).toBe(200);
    expect((await feedback(agent.token, { ...base, plugin: 'csv/file', blacklist: 4, expected: 4, held: 4 })).statusCode).toBe(200);
    const s = await summary(agent.gaid);
    expect(s.enforced['csv/domain']).toMatchObject({ held: 3, listed: 3, server_expected: 3, drift_since: null });
    expect(s.enforced['csv/url']).toMatchObject({ held: 1, listed: 2, server_expected: 2, drift_since: expect.any(Number) });
    expect(s.enforced['csv/file']).toMatchObject({ enforced: 4, held: null, listed: null, server_expected: null, drift_since: null });
  });

  it('keeps the original client body working (no attestation, nothing compared) and refuses a malformed digest naming it', async () => {
    const agent = await registerAgent(app, acme.keys.admin);
    expect((await feedback(agent.token, { agid: agent.gaid, plugin: 'packet_filter', hostname: 'fw', code: 0, score_threshold: 500, blacklist: LISTED })).statusCode).toBe(200);
    expect((await summary(agent.gaid)).enforced.packet_filter).toMatchObject({ enforced: 5, held: null, expected: null, listed: null, server_expected: null, drift_since: null, drifting: false });
    const bad = await feedback(agent.token, { agid: agent.gaid, plugin: 'packet_filter', code: 0, held: 5, held_digest: 'ABC' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors.map((e: { path: string }) => e.path)).toEqual(['body.held_digest']);
  });
});
