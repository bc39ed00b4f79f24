import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresAvailable } from '@rampart/server/testing';
import { metric, removeDir, request, startReplica, type Replica } from './support.ts';

/*
 * Brute force against a running server process (default budgets: 10 failures
 * per address, 30 per key id): wrong secrets on a known key id lock the address out with 429
 * and Retry-After after exactly 10 failures, and nothing more reaches the store or the log;
 * /healthz answers 200 throughout; the key's owner keeps working from the same address; no
 * response says more than "unauthorized" and no secret reaches the log. Stated bound: the
 * refusals promise recovery within the first lock-out (Retry-After at most AUTH_LOCKOUT_SECONDS,
 * 60 s); that lock-outs lift and double is the guard's unit test (services/operators/auth-failures.test.ts,
 * injected clock), not timed here. The store is PostgreSQL when DATABASE_URL is set (it starts
 * faster; the lock-outs act before any store work on either), else the embedded one.
 */

const ATTEMPTS = 300;
const LOCKOUT_SECONDS = 60;

describe('brute force on a known key id', () => {
  let server: Replica;
  let drop = async () => {};
  beforeAll(async () => {
    const db = postgresAvailable ? await createTestDatabase() : undefined;
    if (db) drop = () => db.drop();
    server = await startReplica({ expectDemo: true, env: { AUTH_LOCKOUT_SECONDS: String(LOCKOUT_SECONDS) }, ...(db ? { databaseUrl: db.url } : {}) });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    if (server) removeDir(server.dataDir);
    await drop();
  });

  it('locks the address out, keeps /healthz and the owner working, logs and stores only the first failures', async () => {
    const origin = server.base.replace(/\/api\/v1$/, '');
    const keyId = /^rmp_([0-9a-f]{12})_/.exec(server.demoKey!)![1]!;
    const forgedSecret = 'Zq9'.repeat(14) + 'Z';
    const forged = `rmp_${keyId}_${forgedSecret}`;
    // /healthz is probed all along, as a load balancer would.
    const health: number[] = [];
    let probing = true;
    const prober = (async () => {
      while (probing) {
        health.push((await request(`${origin}/healthz`)).status);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();

    const statuses: number[] = [];
    const bodies = new Set<string>();
    const startedAt = Date.now();
    for (let i = 0; i < ATTEMPTS; i += 1) {
      const res = await request(`${server.base}/ips?ts=0`, { headers: { authorization: forged } });
      statuses.push(res.status);
      const body = (await res.json()) as { type: string; detail: string };
      bodies.add(`${res.status} ${body.type}`);
      if (res.status === 429) {
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(LOCKOUT_SECONDS);
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      }
      expect(JSON.stringify(body)).not.toContain(forgedSecret);
    }
    // The owner's own key, from the same address, is known good and passes.
    expect((await request(`${server.base}/ips?ts=0`, { headers: { authorization: server.demoKey! } })).status).toBe(200);
    probing = false;
    await prober;

    expect(statuses.slice(0, 10)).toEqual(Array<number>(10).fill(401));
    expect(statuses.slice(10).filter((s) => s !== 429)).toEqual([]);
    expect([...bodies].sort()).toEqual(['401 https://rampart.dev/problems/unauthorized', '429 https://rampart.dev/problems/rate_limited']);
    expect(health.length).toBeGreaterThan(0);
    expect(health.filter((s) => s !== 200)).toEqual([]);

    const metrics = await (await request(`${origin}/metrics`)).text();
    expect(metric(metrics, 'rampart_auth_failures_total{reason="wrong_secret"}')).toBe(10);
    expect(metric(metrics, 'rampart_auth_lockouts_total{subject="address"}')).toBe(1);
    expect(metric(metrics, 'rampart_auth_locked_out_requests_total{subject="address"}')).toBe(ATTEMPTS - 10);
    // One log line per failure that reached the store, one for the lock-out; the secret in none.
    const log = server.output();
    expect(log.split('\n').filter((l) => l.includes('"rejected API key"'))).toHaveLength(10);
    expect(log.split('\n').filter((l) => l.includes('"authentication lock-out"'))).toHaveLength(1);
    expect(log).not.toContain(forgedSecret);

    console.info(`fault figures (brute force): ${ATTEMPTS} wrong secrets in ${Date.now() - startedAt} ms: 10 × 401, ${ATTEMPTS - 10} × 429, /healthz 200 × ${health.length}: 10 failures reached the store (one "rejected API key" line each), 1 lock-out line`);
  }, 120_000);
});
