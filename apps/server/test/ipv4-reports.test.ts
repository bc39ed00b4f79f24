import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrganizationConfig } from '@rampart/contracts';
import { liveScore, scoreV32 } from '@rampart/scoring';
import { createEnrichment } from '../src/services/enrichment/enrichment.ts';
import { eventBus, type PlatformEvent } from '../src/services/events.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

interface Held {
  id: number;
  score: number;
  ts: number;
  entry_ts: number;
  members: number;
  events: number;
  sources: string[];
  notes: string[];
  is_network: boolean;
}

describe.each(driverCases())('POST /ips on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let a: TestOrg;
  let b: TestOrg;
  let c: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    a = await seedOrg(store, { trust: 0.9 });
    b = await seedOrg(store, { trust: 0.6 });
    c = await seedOrg(store, { trust: 0.3 });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const report = (key: string, payload: Record<string, unknown>, query = '') =>
    app.inject({ method: 'POST', url: `/api/v1/ips${query}`, headers: { authorization: key }, payload });

  async function held(network: string): Promise<Held | undefined> {
    const res = await sqlOf(store).query<Held>(
      'select id, score, ts, entry_ts, members, events, sources, notes, is_network from ipv4_indicators where network = $1::cidr',
      [network],
    );
    return res.rows[0];
  }

  async function reportRow(network: string, orgId: number) {
    const res = await sqlOf(store).query<{ confidence: number; events: number }>(
      'select r.confidence, r.events from ipv4_reports r join ipv4_indicators i on i.id = r.indicator_id where i.network = $1::cidr and r.org_id = $2',
      [network, orgId],
    );
    return res.rows[0];
  }

  async function waitForNextSecond(after: number) {
    const deadline = Date.now() + 5000;
    while (Math.floor(Date.now() / 1000) <= after) {
      if (Date.now() > deadline) throw new Error('clock did not move');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('creates an indicator (201, no body) scored by v3.2 and ignores unknown fields such as lid', async () => {
    const res = await report(a.keys.contributor, { ip: '199.51.100.7', confidence: 0.8, source: 'ssh', notes: 'brute force', lid: 42 });
    expect(res.statusCode).toBe(201);
    expect(res.body).toBe('');
    const row = await held('199.51.100.7/32');
    expect(row).toMatchObject({ members: 1, events: 1, sources: ['ssh'], notes: ['brute force'], is_network: false });
    expect(row!.score).toBe(scoreV32([{ orgTrust: 0.9, confidence: 0.8, events: 1 }]).s0);
    expect(row!.ts).toBe(row!.entry_ts);
    expect(Math.abs(row!.ts - Date.now() / 1000)).toBeLessThan(5);
  });

  it('merges repeats of one organization (events counted, latest confidence kept), re-anchoring the record when its score changed', async () => {
    const before = (await held('199.51.100.7/32'))!;
    await waitForNextSecond(before.ts);
    const res = await report(a.keys.contributor, { ip: '199.51.100.7', confidence: 0.5, source: 'waf' });
    expect(res.statusCode).toBe(200);
    expect(await reportRow('199.51.100.7/32', a.org.id)).toEqual({ confidence: 0.5, events: 2 });
    const after = (await held('199.51.100.7/32'))!;
    expect(after).toMatchObject({ id: before.id, entry_ts: before.entry_ts, members: 1, events: 2, sources: ['ssh', 'waf'] });
    // The score changed, so every follower must receive the record again (decisions.md).
    expect(after.ts).toBeGreaterThan(before.ts);
    expect(after.score).toBe(scoreV32([{ orgTrust: 0.9, confidence: 0.5, events: 2 }]).s0);
    const count = await sqlOf(store).query<{ n: number }>('select count(*)::int as n from ipv4_reports where org_id = $1', [a.org.id]);
    expect(count.rows[0]!.n).toBe(1);
  });

  it('re-anchors the decay clock on a report from a different organization', async () => {
    const before = (await held('199.51.100.7/32'))!;
    await waitForNextSecond(before.ts);
    expect((await report(b.keys.contributor, { ip: '199.51.100.7', confidence: 1, source: 'ids' })).statusCode).toBe(200);
    const after = (await held('199.51.100.7/32'))!;
    expect(after.ts).toBeGreaterThan(before.ts);
    expect(after.entry_ts).toBe(before.entry_ts);
    expect(after).toMatchObject({ members: 2, events: 3 });
    expect(after.score).toBe(
      scoreV32([
        { orgTrust: 0.9, confidence: 0.5, events: 2 },
        { orgTrust: 0.6, confidence: 1, events: 1 },
      ]).s0,
    );
  });

  it('stores a network once, canonical, whatever host bits it was written with', async () => {
    expect((await report(a.keys.contributor, { ip: '204.0.113.77/24', confidence: 1, source: 'x' })).statusCode).toBe(201);
    expect((await report(c.keys.contributor, { ip: '204.0.113.0/24', confidence: 1, source: 'x' })).statusCode).toBe(200);
    expect(await held('204.0.113.0/24')).toMatchObject({ is_network: true, members: 2, events: 2 });
  });

  it('accepts the bounds of confidence and decision and refuses values past them with the failing field', async () => {
    for (const confidence of [0, 1, '0.5']) {
      expect((await report(a.keys.contributor, { ip: '193.0.2.10', confidence, source: 's' })).statusCode).toBeLessThan(300);
    }
    for (const [body, path] of [
      [{ ip: '193.0.2.10', confidence: -0.01, source: 's' }, 'body.confidence'],
      [{ ip: '193.0.2.10', confidence: 1.01, source: 's' }, 'body.confidence'],
      [{ ip: '193.0.2.10', source: 's' }, 'body.confidence'],
      [{ ip: '193.0.2.10', confidence: 1 }, 'body.source'],
      [{ ip: '193.0.2.10', confidence: 1, source: '' }, 'body.source'],
      [{ ip: '193.0.2.10', confidence: 1, source: 'x'.repeat(257) }, 'body.source'],
      [{ ip: '193.0.2.10', confidence: 1, source: 's', notes: 'x'.repeat(4097) }, 'body.notes'],
      [{ ip: '193.0.2.10', confidence: 1, source: 's', notes: 'a\u0000b' }, 'body.notes'],
      [{ ip: '193.0.2.10', confidence: 1, source: 'a\u0000b' }, 'body.source'],
      [{ ip: '193.0.2.256', confidence: 1, source: 's' }, 'body.ip'],
      [{ ip: '193.0.2.0/33', confidence: 1, source: 's' }, 'body.ip'],
      [{ ip: '2001:db8::1', confidence: 1, source: 's' }, 'body.ip'],
      [{ ip: '193.0.2.10', confidence: 1, source: 's', decision: -2 }, 'body.decision'],
      [{ ip: '193.0.2.10', confidence: 1, source: 's', decision: 2 }, 'body.decision'],
      [{ ip: '193.0.2.10', confidence: 1, source: 's', decision: 0.5 }, 'body.decision'],
      [{ ip: '193.0.2.10', confidence: 1, source: 's', decision: 1, ttl: Math.floor(Date.now() / 1000) - 1 }, 'body.ttl'],
      [{ ip: '193.0.2.10', confidence: 1, source: 's', decision: 0, ttl: Math.floor(Date.now() / 1000) + 100 }, 'body.ttl'],
    ] as const) {
      const res = await report(a.keys.contributor, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json().errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    for (const decision of [-1, 0, 1, '1']) {
      expect((await report(a.keys.contributor, { ip: '193.0.2.11', confidence: 1, source: 's', decision })).statusCode).toBeLessThan(300);
    }
    const row = await held('193.0.2.10/32');
    expect(row).toMatchObject({ events: 3 });
  });

  it('refuses readers (403) and callers without a key (401)', async () => {
    expect((await report(a.keys.reader, { ip: '193.0.2.12', confidence: 1, source: 's' })).statusCode).toBe(403);
    expect((await app.inject({ method: 'POST', url: '/api/v1/ips', payload: { ip: '193.0.2.12', confidence: 1, source: 's' } })).statusCode).toBe(401);
    expect(await held('193.0.2.12/32')).toBeUndefined();
  });

  it('refuses an address inside the organization\'s reserved_ips with 403 and the reason, and changes nothing', async () => {
    await store.settings.replaceOrganization(c.org.id, () => OrganizationConfig.parse({ reserved_ips: ['11.20.3.0/24', '172.15.5.5'] }), 'test');
    const decisionsBefore = await sqlOf(store).query('select * from ipv4_decisions where org_id = $1', [c.org.id]);
    for (const ip of ['11.20.3.4', '172.15.5.5', '11.20.0.0/16', '172.15.5.0/24']) {
      const res = await report(c.keys.contributor, { ip, confidence: 1, source: 's', decision: 1 });
      expect(res.statusCode).toBe(403);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      const problem = res.json();
      expect(problem.type).toBe('https://rampart.dev/problems/reserved_ip');
      expect(problem.detail).toContain('reserved_ips');
      expect(['11.20.3.0/24', '172.15.5.5']).toContain(problem.reserved_range);
      expect(await held(ip.includes('/') ? ip : `${ip}/32`)).toBeUndefined();
    }
    expect((await sqlOf(store).query('select * from ipv4_decisions where org_id = $1', [c.org.id])).rows).toEqual(decisionsBefore.rows);
    // Another organization may report the same address: the reservation is c's alone.
    expect((await report(a.keys.contributor, { ip: '11.20.3.4', confidence: 1, source: 's' })).statusCode).toBe(201);
  });

  it('records the caller organization\'s decision: explicit -1 clears it, an absent decision keeps it, 0 adds no report', async () => {
    const ttl = Math.floor(Date.now() / 1000) + 3600;
    expect((await report(b.keys.contributor, { ip: '193.0.2.50', confidence: 1, source: 's', decision: 1, ttl })).statusCode).toBe(201);
    const decision = async () =>
      (await sqlOf(store).query<{ decision: number; ttl: number | null }>('select decision, ttl from ipv4_decisions where org_id = $1 and network = $2::cidr', [b.org.id, '193.0.2.50/32'])).rows[0];
    expect(await decision()).toEqual({ decision: 1, ttl });
    await report(b.keys.contributor, { ip: '193.0.2.50', confidence: 1, source: 's' });
    expect(await decision()).toEqual({ decision: 1, ttl });
    await report(b.keys.contributor, { ip: '193.0.2.50', confidence: 1, source: 's', decision: -1 });
    expect(await decision()).toEqual({ decision: -1, ttl: null });
    expect((await held('193.0.2.50/32'))!.events).toBe(3);

    expect((await report(a.keys.contributor, { ip: '193.0.2.51', confidence: 1, source: 's', decision: 0 })).statusCode).toBe(200);
    expect(await held('193.0.2.51/32')).toBeUndefined();
  });

  it('counts a report with ?gaid= as that agent\'s check-in', async () => {
    await sqlOf(store).query(`insert into agents (org_id, gaid, document) values ($1, 'RMP-AGENT-ID-IPV4TEST1', '{}'::jsonb)`, [a.org.id]);
    expect((await report(a.keys.contributor, { ip: '193.0.2.60', confidence: 1, source: 's', lid: 'x' }, '?gaid=RMP-AGENT-ID-IPV4TEST1')).statusCode).toBe(201);
    const agent = await sqlOf(store).query<{ via: string | null; at: string | null }>(
      `select last_checkin_via as via, last_checkin_at::text as at from agents where gaid = 'RMP-AGENT-ID-IPV4TEST1'`,
    );
    expect(agent.rows[0]!.via).toBe('ipv4');
    expect(agent.rows[0]!.at).not.toBeNull();
  });

  it('scores concurrent reports of one address from many organizations exactly (no lost update)', async () => {
    const orgs = [a, b, c];
    const more = await Promise.all([seedOrg(store, { trust: 1 }), seedOrg(store, { trust: 0.75 })]);
    orgs.push(...more);
    const results = await Promise.all(orgs.flatMap((o) => [1, 2, 3].map(() => report(o.keys.contributor, { ip: '193.0.2.99', confidence: 0.7, source: 's' }))));
    expect(results.map((r) => r.statusCode).filter((s) => s === 201)).toHaveLength(1);
    const row = (await held('193.0.2.99/32'))!;
    expect(row).toMatchObject({ members: 5, events: 15 });
    expect(row.score).toBe(scoreV32([0.9, 0.6, 0.3, 1, 0.75].map((orgTrust) => ({ orgTrust, confidence: 0.7, events: 3 }))).s0);
    expect(liveScore(row.score, 0)).toBeGreaterThan(0);
  });

  it('shows each stored batch in /metrics: its reports and the time of its begin, lock, write and commit', async () => {
    const sample = (body: string, series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(body)?.[1] ?? 'NaN');
    const read = async () => {
      const body = (await app.inject('/metrics')).body;
      return {
        batches: sample(body, 'rampart_ipv4_ingest_batch_reports_count'),
        reports: sample(body, 'rampart_ipv4_ingest_batch_reports_sum'),
        phases: ['begin', 'lock', 'write', 'commit'].map((phase) => sample(body, `rampart_ipv4_ingest_batch_phase_seconds_count{phase="${phase}"}`)),
      };
    };
    const before = await read();
    // One after the other: each report is a batch of its own.
    for (const ip of ['193.0.2.130', '193.0.2.131', '193.0.2.131']) expect((await report(a.keys.contributor, { ip, confidence: 1, source: 's' })).statusCode).toBeLessThan(300);
    const after = await read();
    expect(after.batches - before.batches).toBe(3);
    expect(after.reports - before.reports).toBe(3);
    expect(after.phases.map((n, i) => n - before.phases[i]!)).toEqual([3, 3, 3, 3]);
  });

  it('publishes feed_changed and decision_changed after the commit', async () => {
    const events: PlatformEvent[] = [];
    const unsubscribe = await eventBus(sqlOf(store)).subscribe((e) => events.push(e));
    try {
      const ttl = Math.floor(Date.now() / 1000) + 600;
      expect((await report(b.keys.contributor, { ip: '193.0.2.77', confidence: 1, source: 's', decision: 1, ttl })).statusCode).toBe(201);
      const deadline = Date.now() + 5000;
      while (!events.some((e) => e.type === 'decision_changed' && e.indicator === '193.0.2.77') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const row = (await held('193.0.2.77/32'))!;
      expect(events).toContainEqual({ type: 'feed_changed', org_id: null, kind: 'ipv4', ts: row.ts });
      expect(events).toContainEqual({ type: 'decision_changed', org_id: b.org.id, kind: 'ipv4', indicator: '193.0.2.77', decision: 1, ttl, ts: row.ts });
    } finally {
      await unsubscribe();
    }
  });

  it('stores the enrichment of a new indicator as its ip_info (full=yes)', async () => {
    expect((await report(a.keys.contributor, { ip: '8.8.8.8', confidence: 1, source: 's' })).statusCode).toBe(201);
    const expected = createEnrichment().ipInfo('8.8.8.8');
    expect(expected?.asn).toMatch(/^AS\d+$/);
    const page = (await app.inject({ url: '/api/v1/ips/8.8.8.8?full=yes', headers: { authorization: a.keys.reader } })).json();
    expect(page.body[0].ip_info).toEqual(expected);
  });
});
