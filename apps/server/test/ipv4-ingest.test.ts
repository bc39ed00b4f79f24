import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrganizationConfig } from '@rampart/contracts';
import { scoreV32 } from '@rampart/scoring';
import pino from 'pino';
import { eventBus } from '../src/services/events.ts';
import { ReportBatcher, V32_INGEST_RULES, type BatchTiming } from '../src/services/ipv4/ingest.ts';
import type { Store } from '../src/store/index.ts';
import { ingestIpv4Batch, type Ipv4ReportItem } from '../src/store/ipv4-ingest.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

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
      sqlOf(store),
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

    const row = (await sqlOf(store).query<{ score: number; members: number; events: number; sources: string[]; notes: string[]; ts: number }>(
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
    const reports = await sqlOf(store).query(`select r.org_id, r.confidence, r.events, r.first_ts, r.sources from ipv4_reports r join ipv4_indicators i on i.id = r.indicator_id where i.network = '192.0.2.5/32'`);
    expect(reports.rows).toEqual([{ org_id: a.org.id, confidence: 0.6, events: 2, first_ts: 1_700_000_000, sources: ['other', 'src'] }]);
    expect((await sqlOf(store).query(`select 1 from ipv4_indicators where network = '198.51.100.0/24'`)).rows).toEqual([]);
  });

  it('moves the anchor for a new organization and for a changed score, and keeps it on a repeat that changes nothing', async () => {
    const first = await ingestIpv4Batch(sqlOf(store), [item(a, '203.0.113.9/32')], V32_INGEST_RULES, 1_700_000_000);
    expect(first.outcomes[0]).toMatchObject({ status: 'stored', created: true, indicatorTs: first.feedTs });
    // Age the indicator by 100 s, as if it had been reported earlier.
    const aged = first.feedTs! - 100;
    await sqlOf(store).query(`update ipv4_indicators set ts = $1 where network = '203.0.113.9/32'`, [aged]);
    // A repeat raises the score (events 1 -> 2): the record is delivered again, re-anchored.
    const raised = await ingestIpv4Batch(sqlOf(store), [item(a, '203.0.113.9/32')], V32_INGEST_RULES, 1_700_000_100);
    expect(raised.feedTs).toBeGreaterThanOrEqual(first.feedTs!);
    expect(raised.outcomes[0]).toEqual({ status: 'stored', created: false, indicatorTs: raised.feedTs });
    // Saturate the organization's events: its repeats no longer change the score.
    const id = (await sqlOf(store).query<{ id: number }>(`select id from ipv4_indicators where network = '203.0.113.9/32'`)).rows[0]!.id;
    await sqlOf(store).query(`update ipv4_reports set events = 1000000 where indicator_id = $1`, [id]);
    const saturated = await ingestIpv4Batch(sqlOf(store), [item(a, '203.0.113.9/32')], V32_INGEST_RULES, 1_700_000_150);
    const settled = (await sqlOf(store).query<{ ts: number; score: number }>(`select ts, score from ipv4_indicators where id = $1`, [id])).rows[0]!;
    await sqlOf(store).query(`update ipv4_indicators set ts = $1 where id = $2`, [aged, id]);
    const repeat = await ingestIpv4Batch(sqlOf(store), [item(a, '203.0.113.9/32')], V32_INGEST_RULES, 1_700_000_160);
    expect(saturated.feedTs).not.toBeNull();
    expect(repeat.feedTs).toBeNull();
    expect(repeat.outcomes[0]).toEqual({ status: 'stored', created: false, indicatorTs: aged });
    expect((await sqlOf(store).query<{ score: number }>(`select score from ipv4_indicators where id = $1`, [id])).rows[0]!.score).toBe(settled.score);
    const other = await ingestIpv4Batch(sqlOf(store), [item(b, '203.0.113.9/32')], V32_INGEST_RULES, 1_700_000_200);
    expect(other.feedTs).toBeGreaterThanOrEqual(first.feedTs!);
    expect(other.outcomes[0]).toEqual({ status: 'stored', created: false, indicatorTs: other.feedTs });
  });

  it.skipIf(driver.name !== 'postgres')('scores with the reporters committed while the batch waited for the row lock', async () => {
    const c = await seedOrg(store, { trust: 0.6 });
    await ingestIpv4Batch(sqlOf(store), [item(a, '203.0.113.77/32')], V32_INGEST_RULES, 1_700_000_000);
    const id = (await sqlOf(store).query<{ id: number }>(`select id from ipv4_indicators where network = '203.0.113.77/32'`)).rows[0]!.id;
    let batch: Promise<unknown> = Promise.resolve();
    await sqlOf(store).transaction(async (tx) => {
      // Another writer holds the row: the batch's first statement takes its snapshot, then waits.
      await tx.query(`select 1 from ipv4_indicators where id = $1 for update`, [id]);
      batch = ingestIpv4Batch(sqlOf(store), [item(b, '203.0.113.77/32')], V32_INGEST_RULES, 1_700_000_100);
      for (let waited = 0; ; waited++) {
        const waiting = await sqlOf(store).query(`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`);
        if (waiting.rowCount > 0) break;
        if (waited > 500) throw new Error('the batch never waited for the row lock');
        await new Promise((r) => setTimeout(r, 10));
      }
      // ... and adds a reporter as a batch does (report row and indicator row in one transaction), after that snapshot.
      await tx.query(`insert into ipv4_reports (indicator_id, org_id, confidence, events, first_ts, last_ts) values ($1, $2, 0.5, 1, 0, 0)`, [id, c.org.id]);
      await tx.query(`update ipv4_indicators set members = 2 where id = $1`, [id]);
    });
    await batch;
    const row = (await sqlOf(store).query<{ score: number; members: number }>(`select score, members from ipv4_indicators where id = $1`, [id])).rows[0]!;
    expect(row).toEqual({
      members: 3,
      score: scoreV32([
        { orgTrust: 0.8, confidence: 0.9, events: 1 },
        { orgTrust: 0.4, confidence: 0.9, events: 1 },
        { orgTrust: 0.6, confidence: 0.5, events: 1 },
      ]).s0,
    });
  });

  it('ReportBatcher settles each report on its own when a batch fails, so one bad report cannot fail the others', async () => {
    const batcher = new ReportBatcher({ ingest: store.ipv4Ingest, events: eventBus(sqlOf(store)), log: pino({ level: 'silent' }), maxInFlight: 1 });
    // The first submit runs alone; the next three queue behind it and form one batch.
    const results = await Promise.allSettled([
      batcher.submit(item(a, '203.0.113.50/32')),
      batcher.submit(item(a, '203.0.113.51/32')),
      batcher.submit(item(a, 'not-a-network')),
      batcher.submit(item(b, '203.0.113.51/32')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const row = (await sqlOf(store).query<{ members: number }>(`select members from ipv4_indicators where network = '203.0.113.51/32'`)).rows[0];
    expect(row).toEqual({ members: 2 });
  });

  it('ReportBatcher times each committed batch: its size and begin, lock, write and commit, which add up to its time', async () => {
    const timings: BatchTiming[] = [];
    const batcher = new ReportBatcher({ ingest: store.ipv4Ingest, events: eventBus(sqlOf(store)), log: pino({ level: 'silent' }), maxInFlight: 1, observe: (t) => timings.push(t) });
    const started = performance.now();
    // The first submit runs alone; the next three queue behind it and form one batch.
    await Promise.all(['203.0.113.60/32', '203.0.113.61/32', '203.0.113.62/32', '203.0.113.63/32'].map((n) => batcher.submit(item(a, n))));
    const elapsed = (performance.now() - started) / 1000;
    expect(timings.map((t) => t.reports)).toEqual([1, 3]);
    for (const t of timings) {
      for (const phase of [t.begin, t.lock, t.write, t.commit]) expect(phase).toBeGreaterThan(0);
    }
    const total = timings.reduce((sum, t) => sum + t.begin + t.lock + t.write + t.commit, 0);
    expect(total).toBeLessThanOrEqual(elapsed);
  });
});
