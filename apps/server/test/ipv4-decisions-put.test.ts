import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ipv4Page } from '@rampart/contracts';
import { reanchoredScore } from '@rampart/scoring';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

describe.each(driverCases())('PUT /ips/{ip} (decision only) on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { name: 'Decide Acme', trust: 0.9 });
    other = await seedOrg(store, { name: 'Decide Other' });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const lookup = async (ip: string, key: string) => Ipv4Page.parse((await app.inject({ url: `/api/v1/ips/${ip}`, headers: { authorization: key } })).json()).body[0];
  /** Waits until the clock has passed second `ts`, so the next change takes a later second. */
  const nextSecond = async (ts: number) => {
    while (Math.floor(Date.now() / 1000) <= ts) await new Promise((r) => setTimeout(r, 20));
  };
  const put = (ip: string, key: string, payload: Record<string, unknown>) => app.inject({ method: 'PUT', url: `/api/v1/ips/${encodeURIComponent(ip)}`, headers: { authorization: key }, payload });

  it('sets, limits and clears the decision, delivering the record again to the deciding organization only', async () => {
    expect((await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: acme.keys.contributor }, payload: { ip: '45.77.113.9', confidence: 0.9, source: 'ssh' } })).statusCode).toBe(201);
    const before = (await lookup('45.77.113.9', acme.keys.reader))!;
    await nextSecond(before.ts);
    const ttl = Math.floor(Date.now() / 1000) + 3600;
    expect((await put('45.77.113.9', acme.keys.contributor, { decision: 1, ttl })).statusCode).toBe(200);
    const blacklisted = (await lookup('45.77.113.9', acme.keys.reader))!;
    // A newer ts (the feed moves), and the live score at that second as the new anchor.
    expect(blacklisted.ts).toBeGreaterThan(before.ts);
    expect(blacklisted).toMatchObject({ decision: 1, ttl, score: reanchoredScore(before.score, blacklisted.ts - before.ts), gid: before.gid });
    expect(blacklisted.info?.events ?? null).toBe(before.info?.events ?? null);
    // Another organization's view is untouched.
    expect((await lookup('45.77.113.9', other.keys.reader))!).toMatchObject({ decision: null, ttl: null, ts: before.ts, score: before.score });

    await nextSecond(blacklisted.ts);
    expect((await put('45.77.113.9', acme.keys.contributor, { decision: '0' })).statusCode).toBe(200);
    const whitelisted = (await lookup('45.77.113.9', acme.keys.reader))!;
    expect(whitelisted.ts).toBeGreaterThan(blacklisted.ts);
    expect(whitelisted).toMatchObject({ decision: 0, ttl: null, score: reanchoredScore(blacklisted.score, whitelisted.ts - blacklisted.ts) });
    await nextSecond(whitelisted.ts);
    expect((await put('45.77.113.9', acme.keys.contributor, { decision: -1 })).statusCode).toBe(200);
    const cleared = (await lookup('45.77.113.9', acme.keys.reader))!;
    expect(cleared.ts).toBeGreaterThan(whitelisted.ts);
    expect(cleared).toMatchObject({ decision: null, ttl: null });
    const counts = await sqlOf(store).query<{ n: number }>(`select count(*)::int as n from ipv4_reports r join ipv4_indicators i on i.id = r.indicator_id where i.network = '45.77.113.9/32'`);
    expect(counts.rows[0]!.n).toBe(1);
  });

  it('takes a URL-encoded network and refuses bad input, readers and reserved addresses', async () => {
    expect((await put('198.51.100.0/24', acme.keys.contributor, { decision: 0 })).statusCode).toBe(200);
    const bad = await put('45.77.113.9', acme.keys.contributor, { decision: 0, ttl: Math.floor(Date.now() / 1000) + 60 });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors).toEqual([{ path: 'body.ttl', message: 'a ttl applies only to decision 1' }]);
    const past = await put('45.77.113.9', acme.keys.contributor, { decision: 1, ttl: 1000 });
    expect(past.statusCode).toBe(400);
    expect(past.json().errors[0].path).toBe('body.ttl');
    const range = await put('45.77.113.9', acme.keys.contributor, { decision: 2 });
    expect(range.statusCode).toBe(400);
    expect(range.json().errors[0].path).toBe('body.decision');
    expect((await put('203.0.113.300', acme.keys.contributor, { decision: 1 })).statusCode).toBe(400);
    expect((await put('45.77.113.9', acme.keys.reader, { decision: 1 })).statusCode).toBe(403);

    const doc = (await app.inject({ url: '/api/v1/organization/config', headers: { authorization: acme.keys.admin } })).json();
    expect((await app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: acme.keys.admin }, payload: { ...doc, reserved_ips: ['192.0.2.0/24'] } })).statusCode).toBe(200);
    const reserved = await put('192.0.2.5', acme.keys.contributor, { decision: 1 });
    expect(reserved.statusCode).toBe(403);
    expect(reserved.json()).toMatchObject({ status: 403, reserved_range: '192.0.2.0/24' });
  });
});
