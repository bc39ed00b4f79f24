import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrganizationConfig } from '@rampart/contracts';
import { scoreV32 } from '@rampart/scoring';
import pino from 'pino';
import { eventBus } from '../src/services/events.ts';
import { ReportBatcher, V32_INGEST_RULES } from '../src/services/ipv4-ingest.ts';
import type { Store } from '../src/store/index.ts';
import { ingestIpv4Batch, type Ipv4ReportItem } from '../src/store/ipv4-ingest.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, type TestOrg } from './support/app.ts';

describe.each(driverCases())('ingestIpv4Batch on $name', (driver) => {
  let store: Store;
  let a: TestOrg;
  let b: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    a = await seedOrg(store, { trust: 0.8 });
    b = await seedOrg(store, { trust: 0.4 });
    await store.settings.replaceOrganization(b.org.id, () => OrganizationConfig.parse({ reserved_ips: ['192.0.2.0/28'] }), 'test');
  });
  afterAll(() => store.close());

  const item = (org: TestOrg, network: string, extra: Partial<Ipv4ReportItem> = {}): Ipv4ReportItem => ({
    orgId: org.org.id,
    network,
    isNetwork: !network.endsWith('/32'),
    gid: `RMP-RULE-GID-T${Math.random().toString(36).slice(2)}`,
    confidence: 0.9,
    source: 'src',
    notes: null,
    addReport: true,
    decision: null,
    ipInfo: null,
    ...extra,
  });

  it('merges one batch per indicator and organization, refuses reserved items alone, and takes the feed clock once', async () => {
    const clockBefore = Math.floor(Date.now() / 1000);
    const result = await ingestIpv4Batch(
      store.db,
      [
        item(a, '192.0.2.5/32', { confidence: 0.2, notes: 'first' }),
        item(b, '192.0.2.5/32'),
        item(a, '192.0.2.5/32', { confidence: 0.6, source: 'other', notes: 'second' }),
        item(b, '198.51.100.1/32', { decision: { value: 1, ttl: null } }),
        item(a, '198.51.100.0/24', { addReport: false, decision: { value: 0, ttl: null } }),
      ],
      V32_INGEST_RULES,
      1_700_000_000,
    );
    expect(result.outcomes.map((o) => o.status)).toEqual(['stored', 'reserved', 'stored', 'stored', 'stored']);
    expect(result.outcomes[1]).toEqual({ status: 'reserved', range: '192.0.2.0/28' });
    expect(result.outcomes[0]).toMatchObject({ created: true, indicatorTs: result.feedTs });
    expect(result.outcomes[4]).toEqual({ status: 'stored', created: false, indicatorTs: null });
    expect(result.feedTs).toBeGreaterThanOrEqual(clockBefore);
    expect(result.decisions.map((d) => [d.orgId, d.network, d.decision])).toEqual(
      [
        [a.org.id, '198.51.100.0/24', 0],
        [b.org.id, '198.51.100.1/32', 1],
      ].sort((x, y) => (x[0] as number) - (y[0] as number)),
    );

    const row = (await store.db.query<{ score: number; members: number; events: number; sources: string[]; notes: string[]; ts: number }>(
      `select score, members, events, sources, notes, ts from ipv4_indicators where network = '192.0.2.5/32'`,
    )).rows[0]!;
    expect(row).toEqual({
      score: scoreV32([{ orgTrust: 0.8, confidence: 0.6, events: 2 }]).s0,
      members: 1,
      events: 2,
      sources: ['other', 'src'],
      notes: ['first', 'second'],
      ts: result.feedTs,
    });
    const reports = await store.db.query(`select r.org_id, r.confidence, r.events, r.first_ts, r.sources from ipv4_reports r join ipv4_indicators i on i.id = r.indicator_id where i.network = '192.0.2.5/32'`);
    expect(reports.rows).toEqual([{ org_id: a.org.id, confidence: 0.6, events: 2, first_ts: 1_700_000_000, sources: ['other', 'src'] }]);
    expect((await store.db.query(`select 1 from ipv4_indicators where network = '198.51.100.0/24'`)).rows).toEqual([]);
  });

  it('keeps the anchor on a repeat by a known organization and moves it for a new one', async () => {
    const first = await ingestIpv4Batch(store.db, [item(a, '203.0.113.9/32')], V32_INGEST_RULES, 1_700_000_000);
    expect(first.outcomes[0]).toMatchObject({ status: 'stored', created: true, indicatorTs: first.feedTs });
    // Age the indicator by 100 s, as if it had been reported earlier.
    const aged = first.feedTs! - 100;
    await store.db.query(`update ipv4_indicators set ts = $1 where network = '203.0.113.9/32'`, [aged]);
    const repeat = await ingestIpv4Batch(store.db, [item(a, '203.0.113.9/32')], V32_INGEST_RULES, 1_700_000_100);
    expect(repeat.feedTs).toBeNull();
    expect(repeat.outcomes[0]).toEqual({ status: 'stored', created: false, indicatorTs: aged });
    const other = await ingestIpv4Batch(store.db, [item(b, '203.0.113.9/32')], V32_INGEST_RULES, 1_700_000_200);
    expect(other.feedTs).toBeGreaterThanOrEqual(first.feedTs!);
    expect(other.outcomes[0]).toEqual({ status: 'stored', created: false, indicatorTs: other.feedTs });
  });

  it('ReportBatcher settles each report on its own when a batch fails, so one bad report cannot fail the others', async () => {
    const batcher = new ReportBatcher({ db: store.db, events: eventBus(store.db), log: pino({ level: 'silent' }), maxInFlight: 1 });
    // The first submit runs alone; the next three queue behind it and form one batch.
    const results = await Promise.allSettled([
      batcher.submit(item(a, '203.0.113.50/32')),
      batcher.submit(item(a, '203.0.113.51/32')),
      batcher.submit(item(a, 'not-a-network')),
      batcher.submit(item(b, '203.0.113.51/32')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const row = (await store.db.query<{ members: number }>(`select members from ipv4_indicators where network = '203.0.113.51/32'`)).rows[0];
    expect(row).toEqual({ members: 2 });
  });
});
