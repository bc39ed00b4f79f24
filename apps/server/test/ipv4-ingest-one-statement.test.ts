import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrganizationConfig } from '@rampart/contracts';
import pg from 'pg';
import pino from 'pino';
import { eventBus } from '../src/services/events.ts';
import { ReportBatcher, V32_INGEST_RULES } from '../src/services/ipv4/ingest.ts';
import type { Store } from '../src/store/index.ts';
import { ingestIpv4Batch, type Ipv4ReportItem } from '../src/store/ipv4-ingest.ts';
import { ingestIpv4OneStatement } from '../src/store/ipv4-ingest-one.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { createTestDatabase, driverCases, postgresAvailable } from './support/databases.ts';
import { seedOrg, type TestOrg } from './support/app.ts';
import { openStore } from '../src/store/index.ts';

/** A small deterministic generator (mulberry32): the same batches on every run. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every column the two paths write, in a comparable order (ids aside: rows are matched by network). */
async function dump(store: Store): Promise<unknown> {
  const db = sqlOf(store);
  const indicators = await db.query(
    `select gid, network::text, is_network, score, ts, entry_ts, members, events, sources, notes, tags, ip_info from ipv4_indicators order by network`,
  );
  const reports = await db.query(
    `select i.network::text, r.org_id, r.confidence, r.events, r.first_ts, r.last_ts, r.sources from ipv4_reports r join ipv4_indicators i on i.id = r.indicator_id order by i.network, r.org_id`,
  );
  return { indicators: indicators.rows, reports: reports.rows };
}

/** Waits until the current second has most of itself left, so that two batches run now take the same feed second. */
async function startOfSecond(): Promise<void> {
  while (Date.now() % 1000 > 250) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe.each(driverCases())('one-statement report batches on $name', (driver) => {
  let oldStore: Store;
  let newStore: Store;
  const orgs: Array<[TestOrg, TestOrg]> = [];

  beforeAll(async () => {
    [oldStore, newStore] = await Promise.all([driver.open(), driver.open()]);
    for (const trust of [0.8, 0.4, 1, 0.33, 0.05]) orgs.push([await seedOrg(oldStore, { trust }), await seedOrg(newStore, { trust })]);
    for (const s of [0, 1] as const) {
      const store = s === 0 ? oldStore : newStore;
      await store.settings.replaceOrganization(orgs[1]![s].org.id, () => OrganizationConfig.parse({ reserved_ips: ['203.0.113.0/29', '203.0.113.0/30'] }), 'test');
    }
  });
  afterAll(async () => {
    await oldStore.close();
    await newStore.close();
  });

  it('stores, scores, re-anchors and answers exactly as the transaction does, batch after batch', async () => {
    const random = prng(35);
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const networks = ['203.0.113.1/32', '203.0.113.2/32', '203.0.113.9/32', '198.51.100.0/24', '198.51.100.7/32', '192.0.2.44/32', '192.0.2.45/32'];
    const sources = ['ssh', 'http', 'Zeta', 'éclair', 'smtp'];
    const notes = [null, '', 'seen twice', 'brute force'];
    // 5e-324 and 1e-200: a product with the trust underflows in float8, which PostgreSQL refuses (api-robustness found it).
    const confidences = [0, 5e-324, 1e-200, 0.1, 0.33, 0.5, 0.77, 0.9, 1];
    for (let step = 0; step < 10; step += 1) {
      const picks = Array.from({ length: 1 + Math.floor(random() * 12) }, () => ({
        org: Math.floor(random() * orgs.length),
        network: pick(networks),
        confidence: pick(confidences),
        source: pick(sources),
        notes: pick(notes),
        gid: `RMP-T-${step}-${Math.floor(random() * 1e9)}`,
      }));
      const items = (s: 0 | 1): Ipv4ReportItem[] =>
        picks.map((p) => ({
          orgId: orgs[p.org]![s].org.id,
          network: p.network,
          isNetwork: !p.network.endsWith('/32'),
          gid: p.gid,
          confidence: p.confidence,
          source: p.source,
          notes: p.notes,
          addReport: true,
          decision: null,
          ipInfo: p.network.startsWith('192.') ? { country: 'ZZ' } : null,
        }));
      const now = 1_700_000_000 + step;
      await startOfSecond();
      const before = await ingestIpv4Batch(sqlOf(oldStore), items(0), V32_INGEST_RULES, now);
      const after = await ingestIpv4OneStatement(sqlOf(newStore), items(1), V32_INGEST_RULES, now, {});
      expect(after, `step ${step} ran as one statement`).not.toBeNull();
      expect(after!.outcomes, `step ${step}`).toEqual(before.outcomes);
      expect(after!.feedTs, `step ${step}`).toEqual(before.feedTs);
      const [a, b] = await Promise.all([dump(oldStore), dump(newStore)]);
      // Organization ids differ between the two databases only if their sequences did; they do not.
      expect(b, `step ${step}`).toEqual(a);
    }
  }, 60_000);

  it('goes through the store as one statement, and a whitelist or decision as the transaction', async () => {
    const org = orgs[0]![1];
    const base = { orgId: org.org.id, network: '100.64.9.9/32', isNetwork: false, gid: 'RMP-T-X-1', confidence: 0.5, source: 'ssh', notes: null, addReport: true, decision: null, ipInfo: null };
    const plain = await newStore.ipv4Ingest.ingest([base], V32_INGEST_RULES, 1_700_000_100, {}, { notifyChannel: 'rampart_test_channel' });
    expect(plain.outcomes).toEqual([{ status: 'stored', created: true, indicatorTs: plain.feedTs }]);
    expect(plain.notified ?? false).toBe(driver.name === 'postgres');
    const decided = await newStore.ipv4Ingest.ingest([{ ...base, decision: { value: 1, ttl: null } }], V32_INGEST_RULES, 1_700_000_101, {}, { notifyChannel: 'rampart_test_channel' });
    expect(decided.notified).toBeUndefined();
    expect(decided.decisions).toHaveLength(1);
  });
});

describe.runIf(postgresAvailable)('one-statement report batches under concurrent writers (PostgreSQL)', () => {
  let store: Store;
  let drop: () => Promise<void>;
  let url: string;
  let org: TestOrg;

  beforeAll(async () => {
    const db = await createTestDatabase();
    drop = () => db.drop();
    url = db.url;
    store = await openStore({ databaseUrl: url });
    org = await seedOrg(store, { trust: 0.7 });
  });
  afterAll(async () => {
    await store.close();
    await drop();
  });

  const item = (network: string): Ipv4ReportItem => ({ orgId: org.org.id, network, isNetwork: false, gid: `RMP-T-C-${network}`, confidence: 0.6, source: 'ssh', notes: null, addReport: true, decision: null, ipInfo: null });

  /** Runs `write` in another session's open transaction, starts the batch (which waits for it), then commits it. */
  async function whileAnotherWrites(write: string, batch: () => Promise<unknown>): Promise<unknown> {
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await other.query('begin');
      await other.query(write);
      const running = batch();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await other.query('commit');
      return await running;
    } finally {
      await other.end();
    }
  }

  it('changes nothing and hands the batch back when a held row changed after its snapshot, and the store then runs the transaction', async () => {
    await store.ipv4Ingest.ingest([item('100.64.1.1/32')], V32_INGEST_RULES, 1_700_000_000);
    const before = await dump(store);
    const handedBack = await whileAnotherWrites(`update ipv4_indicators set updated_at = now() where network = '100.64.1.1/32'`, () =>
      ingestIpv4OneStatement(sqlOf(store), [item('100.64.1.1/32'), item('100.64.1.2/32')], V32_INGEST_RULES, 1_700_000_001, {}),
    );
    expect(handedBack).toBeNull();
    expect(await dump(store)).toEqual(before);
    const stored = (await whileAnotherWrites(`update ipv4_indicators set updated_at = now() where network = '100.64.1.1/32'`, () =>
      store.ipv4Ingest.ingest([item('100.64.1.1/32'), item('100.64.1.2/32')], V32_INGEST_RULES, 1_700_000_001),
    )) as { outcomes: unknown[] };
    expect(stored.outcomes).toMatchObject([{ status: 'stored', created: false }, { status: 'stored', created: true }]);
    expect((await sqlOf(store).query(`select events from ipv4_indicators where network = '100.64.1.1/32'`)).rows).toEqual([{ events: 2 }]);
  });

  it('sends the batch\'s feed_changed with its commit, once, to every listener (the batcher publishes it no more)', async () => {
    const bus = eventBus(store.connection);
    const heard: unknown[] = [];
    const unsubscribe = await bus.subscribe((event) => heard.push(event));
    const batcher = new ReportBatcher({ ingest: store.ipv4Ingest, events: bus, log: pino({ level: 'silent' }) });
    const outcome = await batcher.submit(item('100.64.3.1/32'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await unsubscribe();
    expect(outcome).toMatchObject({ status: 'stored', created: true });
    expect(heard).toEqual([{ type: 'feed_changed', org_id: null, kind: 'ipv4', ts: (outcome as { indicatorTs: number }).indicatorTs }]);
  });

  it('changes nothing and hands the batch back when another transaction inserted one of its new rows meanwhile', async () => {
    const before = await dump(store);
    const handedBack = await whileAnotherWrites(
      `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ('RMP-T-OTHER', '100.64.2.1/32', false, 1, 1, 1)`,
      () => ingestIpv4OneStatement(sqlOf(store), [item('100.64.2.1/32'), item('100.64.2.2/32')], V32_INGEST_RULES, 1_700_000_002, {}),
    );
    expect(handedBack).toBeNull();
    const after = (await dump(store)) as { indicators: Array<{ network: string }> };
    expect(after.indicators.map((r) => r.network)).toEqual([...(before as { indicators: Array<{ network: string }> }).indicators.map((r) => r.network), '100.64.2.1/32'].sort());
  });
});
