import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { IPV4_FEED_LOCK_CLASS } from '../src/store/ipv4.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

/**
 * decisions.md, Compatibility: a client that follows `next_ts` from 0 while others write must
 * receive every record, none twice per change. Here writers of several organizations report
 * new and already held addresses (a report from a new organization re-anchors `ts`, which is a
 * change) while one reader walks the feed.
 */
describe.each(driverCases())('IPv4 feed under concurrent writers on $name', (driver) => {
  let url: string | undefined;
  let store: Store;
  let app: FastifyInstance;
  let orgs: TestOrg[];

  beforeAll(async () => {
    store = await driver.open();
    if (process.env.DATABASE_URL && driver.name === 'postgres') {
      const u = new URL(process.env.DATABASE_URL);
      u.pathname = `/${(await sqlOf(store).query<{ d: string }>('select current_database() as d')).rows[0]!.d}`;
      url = u.toString();
    }
    app = await testApp(store, { rateLimitPerMinute: 1_000_000 });
    orgs = [];
    for (let i = 0; i < 4; i++) orgs.push(await seedOrg(store, { credits: 1_000_000 }));
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('delivers every indicator once per change, in (ts, id) order, to a reader following next_ts', async () => {
    const reportsPerWriter = 120;
    let writing = true;
    const writers = orgs.map(async (org, w) => {
      for (let i = 0; i < reportsPerWriter; i++) {
        // Overlapping address pools: some reports are new, some repeat, some re-anchor.
        const n = (i * 7 + w * 31) % 150;
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/ips',
          headers: { authorization: org.keys.contributor },
          payload: { ip: `45.19.${n >> 8}.${n & 255}`, confidence: 0.5 + (i % 5) / 10, source: `w${w}` },
        });
        expect(res.statusCode, res.body).toBeLessThan(300);
      }
    });
    const allWritten = Promise.all(writers).finally(() => {
      writing = false;
    });

    const received: Array<{ ip: string; ts: number; gid: string }> = [];
    let ts = 0;
    const reader = orgs[0]!.keys.reader;
    const walk = async () => {
      for (;;) {
        const res = await app.inject({ url: `/api/v1/ips?ts=${ts}&page_size=7`, headers: { authorization: reader } });
        expect(res.statusCode).toBe(200);
        const page = res.json() as { header: { next_ts: number }; body: Array<{ ip: string; ts: number; gid: string }> };
        for (const r of page.body) expect(r.ts).toBeGreaterThan(ts);
        received.push(...page.body.map(({ ip, ts: t, gid }) => ({ ip, ts: t, gid })));
        expect(page.header.next_ts).toBe(page.body.at(-1)?.ts ?? ts);
        ts = page.header.next_ts;
        if (page.body.length === 0) return;
      }
    };
    while (writing) {
      await walk();
      // Yield to timers and I/O: PGlite answers through microtasks only.
      await new Promise((r) => setTimeout(r, 5));
    }
    await allWritten;

    // Writers are done; walk until the reader has reached the last ts the store holds.
    const final = await sqlOf(store).query<{ ip: string; ts: number; gid: string }>(
      `select host(network) as ip, ts, gid from ipv4_indicators order by ts, id`,
    );
    const lastTs = final.rows.at(-1)!.ts;
    const deadline = Date.now() + 10_000;
    while (ts < lastTs) {
      if (Date.now() > deadline) throw new Error(`reader stuck at ts ${ts}, store at ${lastTs}`);
      await walk();
      await new Promise((r) => setTimeout(r, 50));
    }

    // Ordered by ts across pages, never the same change twice.
    for (let i = 1; i < received.length; i++) expect(received[i]!.ts).toBeGreaterThanOrEqual(received[i - 1]!.ts);
    const changes = received.map((r) => `${r.ip}@${r.ts}`);
    expect(new Set(changes).size).toBe(changes.length);
    // Every indicator, and for each its current state last.
    const lastSeen = new Map(received.map((r) => [r.ip, r]));
    expect(lastSeen.size).toBe(final.rows.length);
    for (const row of final.rows) {
      expect(lastSeen.get(row.ip), row.ip).toEqual({ ip: row.ip, ts: row.ts, gid: row.gid });
    }
    expect(final.rows.length).toBe(150);
  });

  it.runIf(driver.name === 'postgres')('stops before the second of a writer still in flight, so its record is not skipped', async () => {
    const now = Math.floor(Date.now() / 1000);
    const insert = (db: { query: (sql: string, p: unknown[]) => Promise<unknown> }, gid: string, ip: string, ts: number) =>
      db.query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ($1, $2::cidr, false, 500, $3, $3)`, [gid, `${ip}/32`, ts]);
    const reader = orgs[1]!.keys.reader;
    const feed = async (ts: number) => (await app.inject({ url: `/api/v1/ips?ts=${ts}&page_size=1000`, headers: { authorization: reader } })).json() as { header: { next_ts: number }; body: Array<{ ip: string }> };
    const base = now - 30;
    const mine = (page: { body: Array<{ ip: string }> }) => page.body.map((r) => r.ip).filter((ip) => ip.startsWith('198.20.'));
    await insert(sqlOf(store), 'RMP-RULE-GID-HORIZON1', '198.20.0.1', base + 1);
    const writer = new pg.Client({ connectionString: url! });
    await writer.connect();
    try {
      await writer.query('begin');
      await writer.query('select pg_advisory_xact_lock_shared($1::bigint * 4294967296 + $2)', [IPV4_FEED_LOCK_CLASS, base + 2]);
      await insert(writer, 'RMP-RULE-GID-HORIZON2', '198.20.0.2', base + 2);
      await insert(sqlOf(store), 'RMP-RULE-GID-HORIZON3', '198.20.0.3', base + 3);
      const before = await feed(base);
      expect(mine(before)).toEqual(['198.20.0.1']);
      expect(before.header.next_ts).toBeLessThan(base + 2);
      await writer.query('commit');
      const after = await feed(before.header.next_ts);
      expect(mine(after)).toEqual(['198.20.0.2', '198.20.0.3']);
    } finally {
      await writer.end();
    }
  });
});
