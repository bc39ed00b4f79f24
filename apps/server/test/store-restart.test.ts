import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/store/index.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { registerAgent } from './support/agents.ts';
import { connectSync, until, type SyncPeer } from './support/sync-client.ts';
import { startThrowawayPostgres, throwawayPostgresAvailable, type ThrowawayPostgres } from './support/throwaway-postgres.ts';

/*
 * PostgreSQL restarts under two running replicas (A holds the agent's sync channel, B takes the
 * decisions). The cluster is the test's own (support/throwaway-postgres.ts), never the machine's
 * shared one. After each outage, live events must resume without any restart of the replicas:
 * a decision made through B after recovery reaches the agent on A. While PostgreSQL is down,
 * /readyz is 503 and an API request is a 503 problem with Retry-After; nothing hangs (every
 * request carries a generous abort deadline, which is a hang detector, not a timing assertion).
 */
describe.skipIf(!throwawayPostgresAvailable)('PostgreSQL restart under running replicas', () => {
  let cluster: ThrowawayPostgres;
  let storeA: Store;
  let storeB: Store;
  let appA: FastifyInstance;
  let appB: FastifyInstance;
  let baseA: string;
  let baseB: string;
  let org: TestOrg;
  let peer: SyncPeer;

  const get = (base: string, path: string, headers: Record<string, string> = {}) => fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(20_000) });

  beforeAll(async () => {
    cluster = await startThrowawayPostgres();
    storeA = await openStore({ databaseUrl: cluster.url });
    storeB = await openStore({ databaseUrl: cluster.url });
    appA = await testApp(storeA, { instance: 'a' });
    appB = await testApp(storeB, { instance: 'b' });
    baseA = await appA.listen({ host: '127.0.0.1', port: 0 });
    baseB = await appB.listen({ host: '127.0.0.1', port: 0 });
    org = await seedOrg(storeB, { name: 'Restarts' });
    const agent = await registerAgent(appB, org.keys.admin);
    peer = await connectSync(baseA, { authorization: agent.token });
    await peer.next('hello');
  }, 60_000);
  afterAll(async () => {
    await peer?.close();
    await appA?.close();
    await appB?.close();
    await storeA?.close();
    await storeB?.close();
    await cluster?.destroy();
  });

  async function outage(holdMs: number, octet: number): Promise<{ readyAfterStartMs: number }> {
    await cluster.stop();
    const stoppedAt = Date.now();
    await until('/readyz 503 on A', async () => (await get(baseA, '/readyz')).status === 503 || undefined, 10_000);

    const res = await get(baseB, '/api/v1/ips/203.0.113.200', { authorization: org.keys.reader });
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await res.json()).toMatchObject({ type: 'https://rampart.dev/problems/store_unavailable', status: 503 });
    const put = await fetch(`${baseB}/api/v1/ips/203.0.113.${octet}`, { method: 'PUT', headers: { authorization: org.keys.contributor, 'content-type': 'application/json' }, body: JSON.stringify({ decision: 1 }), signal: AbortSignal.timeout(20_000) });
    expect(put.status).toBe(503);

    // The outage lasts holdMs; readiness is probed throughout and must say 503 on both replicas.
    while (Date.now() - stoppedAt < holdMs) {
      expect((await get(baseA, '/readyz')).status).toBe(503);
      expect((await get(baseB, '/readyz')).status).toBe(503);
      await new Promise((r) => setTimeout(r, Math.min(250, Math.max(0, holdMs - (Date.now() - stoppedAt)))));
    }

    await cluster.start();
    const startedAt = Date.now();
    await until('/readyz 200 on A and B', async () => ((await get(baseA, '/readyz')).status === 200 && (await get(baseB, '/readyz')).status === 200) || undefined, 30_000);
    const readyAfterStartMs = Date.now() - startedAt;

    // A decision made through B after recovery reaches the agent connected to A.
    const decided = await fetch(`${baseB}/api/v1/ips/203.0.113.${octet}`, { method: 'PUT', headers: { authorization: org.keys.contributor, 'content-type': 'application/json' }, body: JSON.stringify({ decision: 1 }), signal: AbortSignal.timeout(20_000) });
    expect(decided.status).toBe(200);
    await peer.next('decision_changed', (m) => m.indicator === `203.0.113.${octet}`, 10_000);
    expect(peer.closed).toBeUndefined();
    const metrics = await (await get(baseA, '/metrics')).text();
    expect(metrics).toMatch(/rampart_store_listener_up 1/);
    expect(metrics).toMatch(/rampart_store_connection_events_total\{role="listener",state="restored"\} [1-9]/);
    console.info(`PostgreSQL down ${holdMs} ms: both replicas ready ${readyAfterStartMs} ms after pg_ctl start returned`);
    return { readyAfterStartMs };
  }

  it('resumes live events after a 0.5 s restart', async () => {
    await outage(500, 1);
  }, 60_000);

  it('resumes live events after a 15 s outage', async () => {
    await outage(15_000, 2);
  }, 90_000);
});
