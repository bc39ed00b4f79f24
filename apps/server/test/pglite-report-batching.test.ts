import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { testConfig } from '../src/config.ts';
import { openStore, type Db, type Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { seedOrg, type TestOrg } from './support/app.ts';

/*
 * The embedded store on disk, as the server runs it: PGlite executes a statement and fsyncs
 * synchronously, so a transaction that never gave the event loop a turn ran from BEGIN to COMMIT
 * while the other requests in flight waited to be read, and each report batch held one report
 * (16 concurrent reports took 16 transactions).
 */
describe('POST /ips on the embedded store: concurrent reports share transactions', () => {
  let dir: string;
  let store: Store;
  let app: FastifyInstance;
  let org: TestOrg;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rampart-pglite-batch-'));
    store = await openStore({ dataDir: join(dir, 'data') });
    org = await seedOrg(store, { trust: 0.7 });
    app = await buildApp({ config: testConfig({ rateLimitPerMinute: 1_000_000 }), store, ipv4Mirror: null });
    await app.ready();
    // The key is verified and cached, the enrichment tables loaded: only the reports remain.
    const warm = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: org.keys.contributor }, payload: { ip: '45.77.0.1', confidence: 0.5, source: 'ssh' } });
    expect(warm.statusCode).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes 16 concurrent reports in a few transactions, each acknowledged', async () => {
    let transactions = 0;
    const db = sqlOf(store);
    const transaction = db.transaction.bind(db);
    (db as { transaction: Db['transaction'] }).transaction = (fn) => {
      transactions += 1;
      return transaction(fn);
    };
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: org.keys.contributor }, payload: { ip: `45.77.1.${i + 1}`, confidence: 0.6, source: 'ssh' } }),
      ),
    );
    expect(answers.map((a) => a.statusCode)).toEqual(Array.from({ length: 16 }, () => 201));
    expect(transactions).toBeGreaterThanOrEqual(1);
    expect(transactions).toBeLessThanOrEqual(4);
    // Every report is held and durable: the store answers each address.
    const held = await sqlOf(store).query<{ n: number }>(`select count(*)::int as n from ipv4_indicators where network <<= '45.77.1.0/24'`);
    expect(held.rows[0]!.n).toBe(16);
  });
});
