import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYNC_CLOSE } from '@rampart/contracts';
import { openStore, sqlOf, type Store, agentConfig, seedOrg, type TestOrg, connectSync, type SyncPeer, startThrowawayPostgres, throwawayPostgresAvailable, type ThrowawayPostgres } from '@rampart/server/testing';
import { metric, removeDir, request, startReplica, tcpProxy, waitUntil, type Replica, type TcpProxy } from './support.ts';

/*
 * A 2-replica deployment (two server processes on one PostgreSQL) with agents on the sync
 * channel of replica A, while PostgreSQL restarts and while A alone is cut off its database.
 * The cluster is the test's own (support/throwaway-postgres.ts), never the machine's shared one;
 * A reaches it through a TCP proxy that can cut A off while B keeps writing.
 *
 * Stated bounds (correctness, not benchmarks): both replicas ready within 30 s of PostgreSQL
 * accepting connections again; a change made through B reaches the agent on A within 15 s of
 * that; every request answers within REQUEST_DEADLINE_MS (20 s), 503 while the database is away.
 * Outside CI a machine without PostgreSQL binaries skips (counted); in CI it fails.
 */

const READY_BOUND_MS = 30_000;
const PUSH_BOUND_MS = 15_000;

describe.skipIf(!throwawayPostgresAvailable)('PostgreSQL faults under two running replicas', () => {
  let cluster: ThrowawayPostgres;
  let proxy: TcpProxy;
  let store: Store;
  let a: Replica;
  let b: Replica;
  let org: TestOrg;
  const agents: { gaid: string; token: string; tokenId: string; peer: SyncPeer }[] = [];
  const figures: string[] = [];

  async function agentOnA(): Promise<(typeof agents)[number]> {
    const config = agentConfig();
    expect((await request(`${b.base}/agents`, { method: 'POST', headers: { authorization: org.keys.admin }, json: config })).status).toBe(201);
    const issued = await request(`${b.base}/agents/${config.gaid}/token`, { method: 'POST', headers: { authorization: org.keys.admin }, json: {} });
    expect(issued.status).toBe(201);
    const { token, token_id: tokenId } = (await issued.json()) as { token: string; token_id: string };
    const peer = await connectSync(a.base.replace(/\/api\/v1$/, ''), { authorization: token });
    await peer.next('hello', undefined, PUSH_BOUND_MS);
    const agent = { gaid: config.gaid, token, tokenId, peer };
    agents.push(agent);
    return agent;
  }

  const ready = async (r: Replica) => (await request(`${r.base.replace(/\/api\/v1$/, '')}/readyz`)).status;
  const decide = (ip: string) => request(`${b.base}/ips/${ip}`, { method: 'PUT', headers: { authorization: org.keys.contributor }, json: { decision: 1 } });
  const revoke = (agent: (typeof agents)[number]) => request(`${b.base}/agents/${agent.gaid}/tokens/${agent.tokenId}`, { method: 'DELETE', headers: { authorization: org.keys.admin } });
  const metricsOf = async (r: Replica) => (await request(`${r.base.replace(/\/api\/v1$/, '')}/metrics`)).text();

  beforeAll(async () => {
    cluster = await startThrowawayPostgres();
    proxy = await tcpProxy(Number(new URL(cluster.url).port));
    const viaProxy = new URL(cluster.url);
    viaProxy.port = String(proxy.port);
    store = await openStore({ databaseUrl: cluster.url });
    org = await seedOrg(store, { name: 'Fault replicas', credits: 1_000_000 });
    // Keys are verified against the store on every request, so that an outage reaches them.
    const env = { AUTH_CACHE_SECONDS: '0' };
    [a, b] = await Promise.all([startReplica({ databaseUrl: viaProxy.toString(), env }), startReplica({ databaseUrl: cluster.url, env })]);
    await agentOnA();
  }, 120_000);

  afterAll(async () => {
    console.info(`fault figures (PostgreSQL, 2 replicas):\n  ${figures.join('\n  ')}`);
    for (const agent of agents) await agent.peer.close();
    await a?.stop();
    await b?.stop();
    for (const r of [a, b]) if (r) removeDir(r.dataDir);
    await store?.close();
    await proxy?.close();
    await cluster?.destroy();
  });

  async function restart(holdMs: number, ip: string) {
    const [agent] = agents;
    await cluster.stop();
    const stoppedAt = Date.now();
    await waitUntil('/readyz 503 on A and B', async () => (await ready(a)) === 503 && (await ready(b)) === 503, 10_000);
    const lookup = await request(`${b.base}/ips/203.0.113.250`, { headers: { authorization: org.keys.reader } });
    expect(lookup.status).toBe(503);
    expect(lookup.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(lookup.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await lookup.json()).toMatchObject({ type: 'https://rampart.dev/problems/store_unavailable', status: 503 });
    expect((await decide(ip)).status).toBe(503);
    // An agent's requests while the store is away are 503, never failed authentications: more of
    // them than AUTH_FAILURES_PER_ADDRESS (10) must not lock its address out.
    for (let i = 0; i < 12; i += 1) expect((await request(`${a.base}/ips?ts=0`, { headers: { authorization: agent!.token } })).status).toBe(503);
    while (Date.now() - stoppedAt < holdMs) {
      expect([await ready(a), await ready(b)]).toEqual([503, 503]);
      await new Promise((r) => setTimeout(r, 250));
    }

    await cluster.start();
    const startedAt = Date.now();
    await waitUntil('/readyz 200 on A and B', async () => (await ready(a)) === 200 && (await ready(b)) === 200, READY_BOUND_MS);
    const readyMs = Date.now() - startedAt;
    expect((await request(`${a.base}/ips?ts=0`, { headers: { authorization: agent!.token } })).status).toBe(200);
    expect((await decide(ip)).status).toBe(200);
    await agent!.peer.next('decision_changed', (m) => m.indicator === ip, PUSH_BOUND_MS);
    const pushedMs = Date.now() - startedAt;
    expect(agent!.peer.closed).toBeUndefined();
    const metrics = await metricsOf(a);
    expect(metric(metrics, 'rampart_store_listener_up')).toBe(1);
    expect(metric(metrics, 'rampart_store_connection_events_total{role="listener",state="restored"}')).toBeGreaterThanOrEqual(1);
    figures.push(`PostgreSQL down ${startedAt - stoppedAt} ms: both replicas ready ${readyMs} ms after it accepted connections again; a decision through B reached the agent on A at ${pushedMs} ms`);
  }

  it('recovers from a 0.5 s restart: readiness, pushes across replicas, no lock-out', async () => {
    await restart(500, '203.0.113.1');
  }, 90_000);

  it('recovers from a 15 s outage the same way', async () => {
    await restart(15_000, '203.0.113.2');
  }, 120_000);

  it('delivers what B published while A was cut off its database: a decision and a revocation', async () => {
    const [agent] = agents;
    const doomed = await agentOnA();
    const replayedBefore = metric(await metricsOf(a), 'rampart_store_notifications_replayed_total');
    proxy.cut();
    const cutAt = Date.now();
    await waitUntil('/readyz 503 on A', async () => (await ready(a)) === 503, 10_000);
    expect(await ready(b)).toBe(200);
    expect((await decide('203.0.113.3')).status).toBe(200);
    expect((await revoke(doomed)).status).toBe(200);
    // A heard neither: its listener is down.
    expect(agent!.peer.messages.some((m) => m.type === 'decision_changed' && m.indicator === '203.0.113.3')).toBe(false);
    expect(doomed.peer.closed).toBeUndefined();

    proxy.restore();
    const restoredAt = Date.now();
    await waitUntil('/readyz 200 on A', async () => (await ready(a)) === 200, READY_BOUND_MS);
    await agent!.peer.next('decision_changed', (m) => m.indicator === '203.0.113.3', PUSH_BOUND_MS);
    const closed = await waitUntil('the revoked key\'s socket to close', () => doomed.peer.closed, PUSH_BOUND_MS);
    expect(closed.code).toBe(SYNC_CLOSE.unauthorized);
    expect(agent!.peer.closed).toBeUndefined();
    // The decision's decision_changed and feed_changed (its re-delivery), and the agent_revoked.
    expect(metric(await metricsOf(a), 'rampart_store_notifications_replayed_total') - replayedBefore).toBe(3);
    figures.push(`A cut off for ${restoredAt - cutAt} ms: the decision and the revocation made meanwhile reached A's agents ${Date.now() - restoredAt} ms after the cut ended`);
  }, 90_000);

  it('asks A\'s agents to reconnect when what it missed is no longer stored, and a new hello follows', async () => {
    const [agent] = agents;
    proxy.cut();
    await waitUntil('/readyz 503 on A', async () => (await ready(a)) === 503, 10_000);
    expect((await decide('203.0.113.4')).status).toBe(200);
    // As the hourly retention would, after a long partition.
    await sqlOf(store).query('delete from store_notifications');
    proxy.restore();
    const closed = await waitUntil('the agent to be asked to reconnect', () => agent!.peer.closed, READY_BOUND_MS);
    expect(closed.code).toBe(SYNC_CLOSE.resync);
    expect(agent!.peer.messages.some((m) => m.type === 'decision_changed' && m.indicator === '203.0.113.4')).toBe(false);
    expect(metric(await metricsOf(a), 'rampart_store_notification_gaps_total')).toBe(1);
    agent!.peer = await connectSync(a.base.replace(/\/api\/v1$/, ''), { authorization: agent!.token });
    await agent!.peer.next('hello', undefined, PUSH_BOUND_MS);
  }, 90_000);

  it('closes the socket of a key revoked after the outages', async () => {
    const [agent] = agents;
    expect((await revoke(agent!)).status).toBe(200);
    const closed = await waitUntil('the revoked key\'s socket to close', () => agent!.peer.closed, PUSH_BOUND_MS);
    expect(closed.code).toBe(SYNC_CLOSE.unauthorized);
    expect((await request(`${a.base}/ips?ts=0`, { headers: { authorization: agent!.token } })).status).toBe(401);
  }, 60_000);
});
