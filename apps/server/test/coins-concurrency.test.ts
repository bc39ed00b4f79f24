import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlOf } from '../src/store/sql-handle.ts';
import { openStore, type Store } from '../src/store/index.ts';
import { createTestDatabase, postgresAvailable } from './support/databases.ts';
import { seedOrg, testApp } from './support/app.ts';

/**
 * Two server instances (two processes' worth of pools and apps) share one PostgreSQL and
 * receive concurrent priced requests over real HTTP from an organization whose balance
 * covers exactly N of them.
 */
describe.runIf(postgresAvailable)('coins are exact across two instances on PostgreSQL', () => {
  let drop: () => Promise<void>;
  const stores: Store[] = [];
  const apps: FastifyInstance[] = [];
  const urls: string[] = [];

  beforeAll(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    for (let i = 0; i < 2; i += 1) {
      const store = await openStore({ databaseUrl: db.url, poolMax: 8 });
      const app = await testApp(store, { rateLimitPerMinute: 100_000 });
      urls.push(await app.listen({ host: '127.0.0.1', port: 0 }));
      stores.push(store);
      apps.push(app);
    }
    // The feed pages are not empty: an empty "nothing new" page is free.
    await sqlOf(stores[0]!).query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ('RMP-RULE-GID-COINS1', '198.51.100.201/32', false, 500, 1, 1)`);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const store of stores) await store.close();
    await drop?.();
  });

  it('lets exactly N of many concurrent requests succeed and debits exactly N x price', async () => {
    const N = 17;
    const TOTAL = 60;
    const org = await seedOrg(stores[0]!, { credits: N });
    const results = await Promise.all(
      Array.from({ length: TOTAL }, (_, i) =>
        fetch(`${urls[i % 2]}/api/v1/ips?ts=0`, { headers: { authorization: org.keys.reader } }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }),
      ),
    );
    expect(results.filter((s) => s === 200)).toHaveLength(N);
    expect(results.filter((s) => s === 402)).toHaveLength(TOTAL - N);
    const after = await stores[1]!.orgs.byGid(org.org.gid);
    expect(after).toMatchObject({ credit_tokens: N, debit_tokens: N });
  });

  it('with a balance large enough to lease, both instances charge from leases and the books balance exactly once they close', async () => {
    const CREDITS = 200_000;
    const org = await seedOrg(stores[0]!, { credits: CREDITS });
    let ok = 0;
    const remaining: number[][] = [[], []];
    for (let round = 0; round < 10; round += 1) {
      const statuses = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          fetch(`${urls[i % 2]}/api/v1/ips?ts=0`, { headers: { authorization: org.keys.reader } }).then(async (r) => {
            await r.arrayBuffer();
            remaining[i % 2]!.push(Number(r.headers.get('x-coins-remaining')));
            return r.status;
          }),
        ),
      );
      ok += statuses.filter((s) => s === 200).length;
    }
    expect(ok).toBe(400);
    // Each instance's figures fall by exactly one coin per request it answered.
    for (const seen of remaining) expect(new Set(seen).size).toBe(seen.length);
    // While leases are held the store has debited more than was spent; /me counts the caller's instance's lease as unspent.
    const held = await stores[0]!.orgs.byGid(org.org.gid);
    expect(held!.debit_tokens).toBeGreaterThan(400);
    for (const app of apps) await app.coinLedger.close();
    const after = await stores[1]!.orgs.byGid(org.org.gid);
    expect(after).toMatchObject({ credit_tokens: CREDITS, debit_tokens: 400 });
  });
});
