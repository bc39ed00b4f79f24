import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperatorActivityResponse, OperatorAgentListResponse, ROLE, type OperatorAgent } from '@rampart/contracts';
import { createApiKey, createUser } from '../src/services/operators/admin.ts';
import type { Store } from '../src/store/index.ts';
import { DAY } from '../src/store/rollups.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { registerAgent } from './support/agents.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/*
 * Issue 37 item 3: the alliance view. Operators see every organization's agents in their one
 * state, and the organizations' activity over 1, 7 and 30 days; organization admins see neither.
 */

describe.each(driverCases())('the alliance view on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let beta: TestOrg;
  let operatorKey: string;
  const gaids: Record<string, string> = {};
  const now = Math.floor(Date.now() / 1000);
  const today = now - (now % DAY);

  const call = (url: string, key: string) => app.inject({ url: `/api/v1${url}`, headers: { authorization: key } });
  const ok = async (url: string) => {
    const res = await call(url, operatorKey);
    expect(res.statusCode, `${url} ${res.body}`).toBe(200);
    return res.json() as unknown;
  };
  const agents = async (query: string): Promise<OperatorAgent[]> => {
    const all: OperatorAgent[] = [];
    let page: string | null = null;
    do {
      const res: OperatorAgentListResponse = OperatorAgentListResponse.parse(await ok(`/operator/agents?${query}${page ? `&page=${encodeURIComponent(page)}` : ''}`));
      all.push(...res.items);
      page = res.next_page;
    } while (page);
    return all;
  };

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    const ops = await seedOrg(store, { name: 'Alliance View Ops' });
    acme = await seedOrg(store, { name: 'Alliance Acme' });
    beta = await seedOrg(store, { name: 'Alliance Beta' });
    const username = `operator.${ops.org.gid.slice(-8).toLowerCase()}@example.org`;
    await createUser(store, { orgGid: ops.org.gid, username, role: ROLE.operator });
    operatorKey = (await createApiKey(store, { username })).key;

    const alive = await registerAgent(app, acme.keys.admin, { sync_time: 5, version: 'v2.1.0' });
    expect((await call('/ipv4/500', alive.token)).statusCode).toBe(200);
    gaids.alive = alive.gaid;
    gaids.never_seen = (await registerAgent(app, acme.keys.admin)).gaid;
    const deactivated = await registerAgent(app, beta.keys.admin);
    expect((await call('/ipv4/500', deactivated.token)).statusCode).toBe(200);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/agents/${deactivated.gaid}`, headers: { authorization: beta.keys.admin } })).statusCode).toBe(200);
    gaids.deactivated = deactivated.gaid;

    // Indicators: [entry day offset, ts day offset, sources, ip_info, reports as [org, first_ts day offset]].
    const seeded: Array<[number, number, string[], object | null, Array<[TestOrg, number]>]> = [
      [0, 0, ['honeypot', 'ssh'], { country: 'DE', asn: 'AS3320' }, [[acme, 0], [beta, 0]]],
      [3, 3, ['honeypot'], { country: 'DE', asn: 'AS24940' }, [[acme, 3]]],
      [3, 0, ['scanner'], { country: 'US', asn: 'AS3320' }, [[beta, 3], [acme, 0]]],
      // Entered 10 days ago, re-anchored today: new only over 30 days.
      [10, 0, ['honeypot'], { country: 'FR' }, [[acme, 10], [beta, 0]]],
      [0, 0, [], null, [[beta, 0]]],
    ];
    for (const [i, [entry, ts, sources, info, reports]] of seeded.entries()) {
      const row = await sqlOf(store).query<{ id: number }>(
        `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, sources, ip_info, members, events)
         values ($1, $2::cidr, false, 500, $3, $4, $5, $6, 1, 1) returning id`,
        [`RMP-RULE-GID-AV${i}`, `198.51.100.${i + 1}`, today - ts * DAY, today - entry * DAY, sources, info === null ? null : JSON.stringify(info)],
      );
      for (const [org, first] of reports) {
        await sqlOf(store).query('insert into ipv4_reports (indicator_id, org_id, confidence, first_ts, last_ts) values ($1, $2, 1, $3, $3)', [row.rows[0]!.id, org.org.id, today - first * DAY]);
      }
    }
    await store.rollups.add({
      reports: [
        { orgId: acme.org.id, hour: today, n: 5 },
        { orgId: acme.org.id, hour: today - 3 * DAY + 3600, n: 2 },
        { orgId: beta.org.id, hour: today - 10 * DAY, n: 7 },
      ],
      coins: [],
    });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('shows an operator every organization’s agents in their one state', async () => {
    const all = await agents('page_size=1');
    const byGaid = new Map(all.map((a) => [a.gaid, a]));
    expect(all.map((a) => a.gaid).sort()).toEqual(Object.values(gaids).sort());
    expect(byGaid.get(gaids.alive!)).toMatchObject({ organization: { gid: acme.org.gid, name: 'Alliance Acme' }, state: 'alive', drifting: false, drift_since: null, version: 'v2.1.0', settings_version: 1 });
    expect(byGaid.get(gaids.alive!)!.last_checkin).toBeGreaterThanOrEqual(now - 5);
    expect(byGaid.get(gaids.never_seen!)).toMatchObject({ organization: { gid: acme.org.gid }, state: 'never_seen', state_since: null, last_checkin: null });
    expect(byGaid.get(gaids.deactivated!)).toMatchObject({ organization: { gid: beta.org.gid, name: 'Alliance Beta' }, state: 'deactivated' });
    expect(byGaid.get(gaids.deactivated!)!.state_since).toBeGreaterThanOrEqual(now - 5);
  });

  it('filters by state and organization, across pages', async () => {
    expect((await agents('state=alive&page_size=1')).map((a) => a.gaid)).toEqual([gaids.alive]);
    expect((await agents('state=deactivated')).map((a) => a.gaid)).toEqual([gaids.deactivated]);
    expect(await agents('state=silent')).toEqual([]);
    expect((await agents(`organization=${acme.org.gid}&page_size=1`)).map((a) => a.gaid).sort()).toEqual([gaids.alive!, gaids.never_seen!].sort());
    expect((await agents(`organization=${beta.org.gid}&state=never_seen`)).map((a) => a.gaid)).toEqual([]);
  });

  it('refuses bad filters by name and a cursor of other filters', async () => {
    const paths = async (url: string) => {
      const res = await call(url, operatorKey);
      expect(res.statusCode, res.body).toBe(400);
      return (res.json() as { errors?: Array<{ path: string }> }).errors?.map((e) => e.path);
    };
    expect(await paths('/operator/agents?state=dead')).toEqual(['querystring.state']);
    expect(await paths('/operator/agents?organization=acme')).toEqual(['querystring.organization']);
    expect(await paths('/operator/activity?days=2')).toEqual(['querystring.days']);
    const first = OperatorAgentListResponse.parse(await ok('/operator/agents?page_size=1'));
    expect(first.next_page).not.toBeNull();
    expect((await call(`/operator/agents?page_size=1&state=alive&page=${encodeURIComponent(first.next_page!)}`, operatorKey)).statusCode).toBe(400);
  });

  it('is for operators only: an organization admin gets 403', async () => {
    expect((await call('/operator/agents', acme.keys.admin)).statusCode).toBe(403);
    expect((await call('/operator/activity', acme.keys.admin)).statusCode).toBe(403);
  });

  it('counts each organization’s reports and new indicators, and the top sources, ASNs and countries, exactly', async () => {
    const activity = async (days: number) => OperatorActivityResponse.parse(await ok(`/operator/activity?days=${days}`));
    const orgs = (a: OperatorActivityResponse) => a.organizations.map((o) => [o.name, o.reports, o.new_indicators]);

    const one = await activity(1);
    expect(one).toMatchObject({ days: 1, since: today, new_indicators: 2 });
    expect(orgs(one)).toEqual([['Alliance Acme', 5, 1], ['Alliance Beta', 0, 1 + 1]]);
    expect(one.organizations[0]!.per_day).toEqual([{ day: today, reports: 5, new_indicators: 1 }]);
    expect(one.top_sources).toEqual([{ value: 'honeypot', indicators: 1 }, { value: 'ssh', indicators: 1 }]);
    expect(one.top_asns).toEqual([{ value: 'AS3320', indicators: 1 }]);
    expect(one.top_countries).toEqual([{ value: 'DE', indicators: 1 }]);

    const week = await activity(7);
    expect(week).toMatchObject({ since: today - 6 * DAY, new_indicators: 4 });
    expect(orgs(week)).toEqual([['Alliance Acme', 7, 3], ['Alliance Beta', 0, 3]]);
    const acmeWeek = week.organizations[0]!.per_day;
    expect(acmeWeek.map((d) => d.day)).toEqual(Array.from({ length: 7 }, (_, i) => today - (6 - i) * DAY));
    expect(acmeWeek.filter((d) => d.reports + d.new_indicators > 0)).toEqual([
      { day: today - 3 * DAY, reports: 2, new_indicators: 1 },
      { day: today, reports: 5, new_indicators: 2 },
    ]);
    expect(week.top_sources).toEqual([{ value: 'honeypot', indicators: 2 }, { value: 'scanner', indicators: 1 }, { value: 'ssh', indicators: 1 }]);
    expect(week.top_asns).toEqual([{ value: 'AS3320', indicators: 2 }, { value: 'AS24940', indicators: 1 }]);
    expect(week.top_countries).toEqual([{ value: 'DE', indicators: 2 }, { value: 'US', indicators: 1 }]);

    const month = await activity(30);
    expect(month).toMatchObject({ since: today - 29 * DAY, new_indicators: 5 });
    expect(orgs(month)).toEqual([['Alliance Acme', 7, 4], ['Alliance Beta', 7, 4]]);
    expect(month.top_sources).toEqual([{ value: 'honeypot', indicators: 3 }, { value: 'scanner', indicators: 1 }, { value: 'ssh', indicators: 1 }]);
    expect(month.top_countries).toEqual([{ value: 'DE', indicators: 2 }, { value: 'FR', indicators: 1 }, { value: 'US', indicators: 1 }]);
  });

  it('counts a report just stored, before the minute’s rollup flush', async () => {
    const gamma = await seedOrg(store, { name: 'Alliance Gamma' });
    const res = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: gamma.keys.contributor }, payload: { ip: '45.77.201.9', confidence: 0.9, source: 'waf' } });
    expect(res.statusCode, res.body).toBeLessThan(300);
    const one = OperatorActivityResponse.parse(await ok('/operator/activity?days=1'));
    expect(one.organizations.find((o) => o.gid === gamma.org.gid)).toMatchObject({ name: 'Alliance Gamma', reports: 1, new_indicators: 1 });
    expect(one.top_sources).toContainEqual({ value: 'waf', indicators: 1 });
  });
});
