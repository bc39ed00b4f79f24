import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ipv4SpecialRange, parseIpv4 } from '@rampart/contracts';
import { scoreV32 } from '@rampart/scoring';
import { createTestDatabase, openStore, postgresAvailable, seedOrg, sqlOf, testApp, type Store } from '@rampart/server/testing';
import { copyIpv4, genIndicators, genIpInfo, orgTrust, type GenIndicator } from '../../bench/gen-ipv4-copy.ts';

/*
 * Issue 36 item 3, the generator of bench/scale-10m.ts at a small size: 10,000 indicators copied
 * into a migrated database; the store reads back exactly the rows the generator computed (the
 * feed's records, their reports), every address is public, each score is scoreV32 of its reports,
 * and a report through the API onto a generated indicator merges as onto an ingested one.
 */

const N = 10_000;
const ORGS = 200;

describe.skipIf(!postgresAvailable)('IPv4 COPY generator (bench/gen-ipv4-copy.ts)', { timeout: 120_000 }, () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: Store;
  let expected: GenIndicator[];
  let orgIds: number[];
  // In the past, so that every generated ts is a complete feed second.
  const now = Math.floor(Date.now() / 1000) - 60;

  beforeAll(async () => {
    db = await createTestDatabase();
    const migrated = await openStore({ databaseUrl: db.url });
    await migrated.close();
    const result = await copyIpv4(db.url, N, { orgs: ORGS, now });
    orgIds = result.orgIds;
    expected = [...genIndicators(N, ORGS, now)];
    expect(result.reports).toBe(expected.reduce((s, g) => s + g.reports.length, 0));
    store = await openStore({ databaseUrl: db.url });
  });

  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('generates public, distinct addresses with a spread of scores', () => {
    expect(new Set(expected.map((g) => g.addr)).size).toBe(N);
    for (const g of expected) expect(ipv4SpecialRange(parseIpv4(g.network)!), g.network).toBeUndefined();
    const scores = expected.map((g) => g.score);
    expect(Math.min(...scores)).toBeLessThan(100);
    expect(Math.max(...scores)).toBeGreaterThan(900);
    expect(new Set(expected.map((g) => g.members)).size).toBeGreaterThan(20);
    // As ingestion stores them: the offline enrichment knows most public addresses' AS.
    expect(expected.filter((g) => genIpInfo(g.network)?.asn).length).toBeGreaterThan(N / 2);
  });

  it('reads back through the store exactly the records the generator computed', async () => {
    const org = await store.orgs.byGid((await sqlOf(store).query<{ gid: string }>('select gid from organizations where id = $1', [orgIds[0]])).rows[0]!.gid);
    const rows = await store.ipv4.feedPage(org!.id, 0, N + 10, 0);
    const read = rows
      .map((r) => ({ id: Number(r.id), gid: r.gid, network: r.network, is_network: r.is_network, score: r.score, ts: Number(r.ts), entry_ts: Number(r.entry_ts), members: r.members, events: r.events, sources: r.sources, notes: r.notes, tags: r.tags, ip_info: r.ip_info, decision: r.decision }))
      .sort((a, b) => a.id - b.id);
    expect(read).toEqual(
      expected.map((g) => ({ id: g.id, gid: g.gid, network: g.network, is_network: false, score: g.score, ts: g.ts, entry_ts: g.entryTs, members: g.members, events: g.events, sources: g.sources, notes: [], tags: [], ip_info: genIpInfo(g.network), decision: null })),
    );
  });

  it('stores each report, and each score is scoreV32 of them', async () => {
    const res = await sqlOf(store).query<{ indicator_id: string; org_id: string; confidence: number; events: number; first_ts: string; last_ts: string; sources: string[]; trust: number }>(
      'select r.*, o.trust from ipv4_reports r join organizations o on o.id = r.org_id order by r.indicator_id, r.org_id',
    );
    const want = expected
      .flatMap((g) => g.reports.map((r) => ({ indicator_id: g.id, org_id: orgIds[r.org]!, confidence: r.confidence, events: r.events, first_ts: g.entryTs, last_ts: g.ts, sources: [r.source], trust: orgTrust(r.org) })))
      .sort((a, b) => a.indicator_id - b.indicator_id || a.org_id - b.org_id);
    expect(res.rows.map((r) => ({ ...r, indicator_id: Number(r.indicator_id), org_id: Number(r.org_id), first_ts: Number(r.first_ts), last_ts: Number(r.last_ts) }))).toEqual(want);
    const byIndicator = new Map<number, typeof want>();
    for (const r of want) byIndicator.set(r.indicator_id, [...(byIndicator.get(r.indicator_id) ?? []), r]);
    for (const g of expected) expect(scoreV32(byIndicator.get(g.id)!.map((r) => ({ orgTrust: r.trust, confidence: r.confidence, events: r.events }))).s0).toBe(g.score);
  });

  it('takes a report through the API on a generated indicator as on an ingested one', async () => {
    const app = await testApp(store);
    try {
      const reporter = await seedOrg(store, { trust: 0.5, credits: 1000 });
      const g = expected.find((x) => x.members === 3)!;
      const ip = g.network.replace(/\/32$/, '');
      const res = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: reporter.keys.contributor }, payload: { ip, confidence: 0.8, source: 'ftp' } });
      // 200, not 201: the address is held (a new one answers 201).
      expect(res.statusCode, res.body).toBe(200);
      const after = (await sqlOf(store).query<{ score: number; members: number; events: number; sources: string[] }>('select score, members, events, sources from ipv4_indicators where id = $1', [g.id])).rows[0]!;
      const aggregates = [...g.reports.map((r) => ({ orgTrust: orgTrust(r.org), confidence: r.confidence, events: r.events })), { orgTrust: 0.5, confidence: 0.8, events: 1 }];
      expect(after).toEqual({ score: scoreV32(aggregates).s0, members: 4, events: g.events + 1, sources: [...g.sources, 'ftp'].sort() });
    } finally {
      await app.close();
    }
  });
});
