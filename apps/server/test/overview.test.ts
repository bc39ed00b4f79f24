import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OverviewResponse } from '@rampart/contracts';
import { liveScore } from '@rampart/scoring';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

describe.each(driverCases())('GET /overview on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;
  const now = Math.floor(Date.now() / 1000);
  // [address, s0, age in seconds]
  const held: Array<[string, number, number]> = [
    ['203.0.113.1', 500, 0],
    ['203.0.113.2', 500, 3600 * 1000],
    ['203.0.113.3', 90, 3600 * 24],
    ['198.51.100.0/24', 1000, 60],
    ['192.0.2.9', 3, 3600 * 24 * 30],
  ];

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 7, name: 'Overview Acme' });
    other = await seedOrg(store, { name: 'Overview Other' });
    for (const [i, [network, score, age]] of held.entries()) {
      const row = await sqlOf(store).query<{ id: number }>(
        `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ($1, $2::cidr, $3, $4, $5, $5) returning id`,
        [`RMP-RULE-GID-OV${i}`, network, network.includes('/'), score, now - age],
      );
      // acme reported the first three: two within the last day; other reported them all.
      const id = row.rows[0]!.id;
      if (i < 3) await sqlOf(store).query('insert into ipv4_reports (indicator_id, org_id, confidence, first_ts, last_ts) values ($1, $2, 1, $3, $3)', [id, acme.org.id, i < 2 ? now - 60 : now - 90_000]);
      await sqlOf(store).query('insert into ipv4_reports (indicator_id, org_id, confidence, first_ts, last_ts) values ($1, $2, 1, $3, $3)', [id, other.org.id, now]);
    }
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('counts indicators by live score, reports of the caller in the last day, and coins', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/overview', headers: { authorization: acme.keys.reader } });
    expect(res.statusCode).toBe(200);
    const body = OverviewResponse.parse(res.json());
    expect(Math.abs(body.at - now)).toBeLessThan(600);
    const expected = new Array<number>(1001).fill(0);
    for (const [, s0, age] of held) expected[Math.floor(liveScore(s0, body.at - (now - age)))]! += 1;
    expect(body.ipv4.total).toBe(5);
    expect(body.ipv4.histogram).toEqual(expected);
    expect(body.reports_24h).toBe(2);
    expect(body.coins).toEqual({ credit_tokens: 7, debit_tokens: 0, balance: 7 });
    const theirs = OverviewResponse.parse((await app.inject({ method: 'GET', url: '/api/v1/overview', headers: { authorization: other.keys.reader } })).json());
    expect(theirs.reports_24h).toBe(5);
  });

  it('needs a key', async () => {
    expect((await app.inject({ method: 'GET', url: '/api/v1/overview' })).statusCode).toBe(401);
  });
});
