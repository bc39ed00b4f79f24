import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OverviewHistoryResponse } from '@rampart/contracts';
import { liveScore } from '@rampart/scoring';
import type { Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { Rollups } from '../src/services/operators/rollups.ts';
import { driverCases } from './support/databases.ts';
import { registerAgent } from './support/agents.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

const HOUR = 3600;
const DAY = 86_400;
const quiet = { warn: () => undefined };

describe.each(driverCases())('GET /overview/history on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    // Reports cost 2 coins here, so that the coin rollup has something to count.
    app = await testApp(store, { coinPrices: { lookup: 1, deep_scan: 5, feed: 1, list: 2, report: 2, decision: 0, tool: 1, stix: 1, vpn: 10 } });
    acme = await seedOrg(store, { name: 'History Acme' });
    other = await seedOrg(store, { name: 'History Other' });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const history = async (key: string, query = '') => {
    const res = await app.inject({ method: 'GET', url: `/api/v1/overview/history${query}`, headers: { authorization: key } });
    expect(res.statusCode, res.body).toBe(200);
    return OverviewHistoryResponse.parse(res.json());
  };
  const post = async (key: string, url: string, payload: object) => {
    const res = await app.inject({ method: 'POST', url: `/api/v1${url}`, headers: { authorization: key }, payload });
    expect([200, 201], res.body).toContain(res.statusCode);
  };

  it('counts every report in its hour, per organization and for the alliance, and the coins they cost', async () => {
    await post(acme.keys.contributor, '/ips', { ip: '45.77.100.7', confidence: 0.9, source: 'ssh' });
    await post(acme.keys.contributor, '/ips', { ip: '45.77.100.7', confidence: 0.9, source: 'ssh' });
    await post(acme.keys.contributor, '/ips', { ip: '45.77.100.8', confidence: 0.5, source: 'ssh' });
    await post(acme.keys.contributor, '/domains', { domain: 'history-acme.example.com', confidence: 0.7 });
    await post(other.keys.contributor, '/ips', { ip: '45.77.100.7', confidence: 0.8, source: 'web' });
    // A whitelist is a decision, not a report: not counted as one (its request is charged all the same).
    await post(acme.keys.contributor, '/ips', { ip: '45.77.100.9', confidence: 1, source: 'ssh', decision: 0 });

    const mine = await history(acme.keys.reader);
    expect(mine.days).toBe(30);
    expect(mine.reports_per_hour).toHaveLength(30 * 24 + 1);
    const hour = mine.at - (mine.at % HOUR);
    expect(mine.reports_per_hour[0]!.hour).toBe(hour - 30 * 24 * HOUR);
    expect(mine.reports_per_hour.at(-1)!.hour).toBe(hour);
    expect(mine.reports_per_hour.every((p, i) => p.hour === hour - (30 * 24 - i) * HOUR)).toBe(true);
    // Summed, so that a test run across an hour (or day) boundary counts the same.
    const sum = <T,>(rows: T[], f: (r: T) => number) => rows.reduce((a, r) => a + f(r), 0);
    expect(sum(mine.reports_per_hour, (p) => p.organization)).toBe(4);
    expect(sum(mine.reports_per_hour, (p) => p.alliance)).toBe(5);
    expect(mine.reports_per_hour.slice(0, -2).every((p) => p.organization === 0 && p.alliance === 0)).toBe(true);
    expect(mine.coins_spent_per_day).toHaveLength(31);
    expect(mine.coins_spent_per_day.at(-1)!.day).toBe(mine.at - (mine.at % DAY));
    expect(sum(mine.coins_spent_per_day, (d) => d.coins)).toBe(10);

    const theirs = await history(other.keys.reader, '?days=1');
    expect(theirs.reports_per_hour).toHaveLength(25);
    expect(sum(theirs.reports_per_hour, (p) => p.organization)).toBe(1);
    expect(sum(theirs.reports_per_hour, (p) => p.alliance)).toBe(5);
    expect(sum(theirs.coins_spent_per_day, (d) => d.coins)).toBe(2);
  });

  it('samples the agents alive in the hour', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    await registerAgent(app, acme.keys.admin);
    await store.agents.checkIn(acme.org.id, a.gaid, 'ipv4');
    const mine = await history(acme.keys.reader, '?days=1');
    expect(mine.agents_alive_per_hour.at(-1)).toEqual({ hour: mine.at - (mine.at % HOUR), alive: 1, active: 2 });
    const theirs = await history(other.keys.reader, '?days=1');
    expect(theirs.agents_alive_per_hour.at(-1)!.alive).toBe(0);
  });

  it('refuses a range it does not keep, with the field named', async () => {
    for (const query of ['?days=0', '?days=31', '?days=2.5', '?days=many', '?since=0']) {
      const res = await app.inject({ method: 'GET', url: `/api/v1/overview/history${query}`, headers: { authorization: acme.keys.reader } });
      expect(res.statusCode, query).toBe(400);
      expect(res.headers['content-type']).toContain('application/problem+json');
    }
    expect((await app.inject({ method: 'GET', url: '/api/v1/overview/history' })).statusCode).toBe(401);
  });
});

describe.each(driverCases())('rollup store and job on $name', (driver) => {
  let store: Store;
  let acme: TestOrg;
  let other: TestOrg;
  // A fixed clock: 2026-11-20 10:30:00 UTC.
  const now = Date.UTC(2026, 10, 20, 10, 30) / 1000;
  const hour = now - (now % HOUR);
  const day = now - (now % DAY);

  beforeAll(async () => {
    store = await driver.open();
    acme = await seedOrg(store, { name: 'Rollup Acme' });
    other = await seedOrg(store, { name: 'Rollup Other' });
  });
  afterAll(async () => store.close());

  it('puts counts in their UTC hour and day, adds flushes together, and keeps organizations apart', async () => {
    const rollups = new Rollups(store, quiet);
    rollups.countReports(acme.org.id, 3, hour - 1); // the previous hour's last second
    rollups.countReports(acme.org.id, 2, hour);
    rollups.countReports(other.org.id, 7, hour + 1799);
    rollups.countCoins(acme.org.id, 5, day - 1);
    rollups.countCoins(acme.org.id, 4, now);
    await rollups.flush();
    rollups.countReports(acme.org.id, 1, now);
    const h = await rollups.history(acme.org, 2, now);
    expect(h.reports_per_hour).toHaveLength(49);
    expect(h.reports_per_hour.slice(-2)).toEqual([
      { hour: hour - HOUR, organization: 3, alliance: 3 },
      { hour, organization: 3, alliance: 10 },
    ]);
    expect(h.coins_spent_per_day).toEqual([
      { day: day - 2 * DAY, coins: 0 },
      { day: day - DAY, coins: 5 },
      { day, coins: 4 },
    ]);
    const theirs = await rollups.history(other.org, 1, now);
    expect(theirs.reports_per_hour.at(-1)).toEqual({ hour, organization: 7, alliance: 10 });
    expect(theirs.coins_spent_per_day.every((d) => d.coins === 0)).toBe(true);
  });

  it('keeps counts whose flush failed for the next flush', async () => {
    const rollups = new Rollups(store, quiet);
    rollups.countReports(9_999_999, 1, now); // an organization that does not exist is dropped, not an error
    rollups.countReports(other.org.id, 1, now);
    const add = store.rollups.add.bind(store.rollups);
    let fail = true;
    store.rollups.add = async (counts) => {
      if (fail) throw new Error('store down');
      return add(counts);
    };
    try {
      await expect(rollups.flush()).rejects.toThrow('store down');
      fail = false;
      await rollups.flush();
    } finally {
      store.rollups.add = add;
    }
    const theirs = await rollups.history(other.org, 1, now);
    expect(theirs.reports_per_hour.at(-1)).toEqual({ hour, organization: 8, alliance: 11 });
  });

  it('snapshots indicators per band once a day per view, in the organization bands and delay; the job refreshes it', async () => {
    const sql = sqlOf(store);
    // [address, s0, age in seconds]
    const held: Array<[string, number, number]> = [
      ['203.0.113.1', 30, 0],
      ['203.0.113.2', 100, 0],
      ['203.0.113.3', 130, 60],
      ['203.0.113.4', 900, 0],
      ['203.0.113.5', 10, 3600 * 1000],
    ];
    for (const [i, [network, score, age]] of held.entries()) {
      await sql.query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ($1, $2::cidr, false, $3, $4, $4)`, [
        `RMP-RULE-GID-RU${i}`,
        network,
        score,
        now - age,
      ]);
    }
    expect(liveScore(10, 3600 * 1000)).toBeLessThan(1); // in no band
    // An organization no view has snapshotted yet today.
    const fresh = await seedOrg(store, { name: 'Rollup Fresh' });
    const rollups = new Rollups(store, quiet);
    const first = await rollups.history(fresh.org, 1, now);
    expect(first.indicators_per_band).toEqual([{ day, at: now, low: 1, medium: 1, high: 1, critical: 1 }]);
    // Stored, not recomputed per view: a new indicator shows at the next snapshot.
    await sql.query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ('RMP-RULE-GID-RU9', '203.0.113.9/32', false, 500, $1, $1)`, [now]);
    expect((await rollups.history(fresh.org, 1, now + 60)).indicators_per_band).toEqual(first.indicators_per_band);
    await rollups.tick(now + 120);
    expect((await rollups.history(fresh.org, 1, now + 120)).indicators_per_band).toEqual([{ day, at: now + 120, low: 1, medium: 1, high: 1, critical: 2 }]);
    // A delayed organization does not see the records of the last hour yet.
    await sql.query(`update organizations set delay = '3600' where id = $1`, [other.org.id]);
    await rollups.snapshotBands(now + 120, { ...other.org, delay: '3600' });
    expect((await rollups.history({ ...other.org, delay: '3600' }, 1, now + 120)).indicators_per_band).toEqual([
      { day, at: now + 120, low: 0, medium: 0, high: 0, critical: 0 },
    ]);
  });

  it('scans the indicators once per group of organizations that share bands and delay, not once per organization', async () => {
    await sqlOf(store).query(`update organizations set delay = '3600' where id = $1`, [other.org.id]);
    const third = await seedOrg(store, { name: 'Rollup Third' });
    const scans: number[][] = [];
    const snapshot = store.rollups.snapshotBands.bind(store.rollups);
    store.rollups.snapshotBands = (ids, ...rest) => {
      scans.push([...ids].sort((x, y) => x - y));
      return snapshot(ids, ...rest);
    };
    try {
      await new Rollups(store, quiet).snapshotBands(now + 240);
    } finally {
      store.rollups.snapshotBands = snapshot;
    }
    const orgs = (await store.rollups.organizations()).map((o) => o.id);
    expect(scans).toHaveLength(2);
    expect(scans.find((ids) => ids.includes(other.org.id))).toEqual([other.org.id]);
    expect(scans.find((ids) => ids.includes(acme.org.id))).toEqual(orgs.filter((id) => id !== other.org.id));
    const rows = await sqlOf(store).query<{ org_id: string; at: string; low: number; medium: number; high: number; critical: number }>(
      'select org_id, at, low, medium, high, critical from rollup_bands_daily where day = $1 order by org_id',
      [day],
    );
    expect(rows.rows.map((r) => Number(r.org_id))).toEqual([...orgs].sort((x, y) => x - y));
    expect(new Set(rows.rows.map((r) => Number(r.at)))).toEqual(new Set([now + 240]));
    // The organizations of one group got the same counts, each in its own row.
    const counts = (id: number) => {
      const r = rows.rows.find((x) => Number(x.org_id) === id)!;
      return [r.low, r.medium, r.high, r.critical];
    };
    expect(counts(third.org.id)).toEqual(counts(acme.org.id));
  });

  it('prunes buckets older than the retention and keeps the rest', async () => {
    const old = day - 32 * DAY;
    await store.rollups.add({ reports: [{ orgId: acme.org.id, hour: old, n: 4 }, { orgId: acme.org.id, hour: day - 30 * DAY, n: 6 }], coins: [{ orgId: acme.org.id, day: old, n: 9 }] });
    const rollups = new Rollups(store, quiet);
    await rollups.tick(now); // a new job's first run is a full one: snapshots and pruning
    const rows = await sqlOf(store).query<{ hour: string; reports: string }>('select hour, reports from rollup_reports_hourly where org_id = $1 and hour < $2 order by hour', [acme.org.id, day - 29 * DAY]);
    expect(rows.rows.map((r) => [Number(r.hour), Number(r.reports)])).toEqual([[day - 30 * DAY, 6]]);
    const coins = await sqlOf(store).query('select 1 from rollup_coins_daily where day = $1', [old]);
    expect(coins.rows).toHaveLength(0);
  });
});
