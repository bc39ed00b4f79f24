import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, seedOrg, sqlOf, startThrowawayPostgres, startThrowawayStandby, throwawayPostgresAvailable, type Store, type TestOrg, type ThrowawayPostgres, type ThrowawayStandby } from '@rampart/server/testing';
import { removeDir, request, startReplica, waitUntil, type Replica } from './support.ts';

/*
 * Issue 36 item 2: PostgreSQL fails over under a running server. A primary and a streaming
 * standby (pg_basebackup), synchronous (`synchronous_standby_names = '*'`, synchronous_commit on):
 * a commit is acknowledged once the standby has it. The server is given both hosts
 * (`DATABASE_URL=postgres://…@primary,standby/…?target_session_attrs=read-write`, store/pg-hosts.ts).
 * While a client reports without pause, the primary crashes (immediate shutdown) and the standby
 * is promoted: the server serves again without a restart, clients see only answers and 503 with
 * Retry-After meanwhile, and every acknowledged report is on the new primary. Figures printed.
 */

describe.skipIf(!throwawayPostgresAvailable)('PostgreSQL fail-over to a synchronous standby under a running server', { timeout: 180_000 }, () => {
  let primary: ThrowawayPostgres;
  let standby: ThrowawayStandby;
  let server: Replica;
  let org: TestOrg;
  const figures: string[] = [];

  async function sql(url: string, text: string): Promise<pg.QueryResult> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await client.query(text);
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    primary = await startThrowawayPostgres();
    const seeding: Store = await openStore({ databaseUrl: primary.url });
    org = await seedOrg(seeding, { name: 'Fail-over', credits: 1_000_000 });
    await seeding.close();
    standby = await startThrowawayStandby(primary);
    await waitUntil('the standby streaming', async () => (await sql(primary.url, "select count(*)::int as n from pg_stat_replication where state = 'streaming'")).rows[0].n === 1, 30_000, 100);
    await sql(primary.url, "alter system set synchronous_standby_names = '*'");
    await sql(primary.url, 'select pg_reload_conf()');
    await waitUntil('the standby synchronous', async () => (await sql(primary.url, "select count(*)::int as n from pg_stat_replication where sync_state = 'sync'")).rows[0].n === 1, 30_000, 100);
    const hosts = `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres?target_session_attrs=read-write`;
    server = await startReplica({ databaseUrl: hosts, env: { AUTH_CACHE_SECONDS: '0' } });
  }, 120_000);

  afterAll(async () => {
    if (server && server.child.exitCode !== null) console.info(`server exited ${server.child.exitCode}:\n${server.output().slice(-4000)}`);
    if (figures.length) console.info(`PostgreSQL fail-over:\n  ${figures.join('\n  ')}`);
    await server?.stop();
    if (server) removeDir(server.dataDir);
    await standby?.destroy();
    await primary?.destroy();
  });

  it('serves again from the promoted standby without a restart, and no acknowledged report is lost', async () => {
    const acknowledged: string[] = [];
    const statuses = new Map<number, number>();
    let running = true;
    let n = 0;
    let firstAfterPromote = 0;
    let promotedAt = 0;
    const client = (async () => {
      while (running) {
        n += 1;
        const ip = `45.${Math.floor(n / 250) + 60}.${n % 250}.3`;
        const res = await request(`${server.base}/ips`, { method: 'POST', headers: { authorization: org.keys.contributor }, json: { ip, confidence: 1, source: 'failover' } });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 503) {
          expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
          await new Promise((r) => setTimeout(r, 100));
        }
        if (res.ok) {
          acknowledged.push(ip);
          if (promotedAt && !firstAfterPromote) firstAfterPromote = Date.now();
        }
      }
    })();
    try {
      await waitUntil('reports acknowledged before the crash', () => acknowledged.length >= 50, 30_000);
      const before = acknowledged.length;
      await primary.crash();
      const crashedAt = Date.now();
      await waitUntil('the server saying it is not ready', async () => (await request(`${server.base.replace(/\/api\/v1$/, '')}/readyz`)).status === 503, 15_000);
      await standby.promote();
      promotedAt = Date.now();
      await waitUntil('a report acknowledged by the new primary', () => firstAfterPromote > 0, 30_000);
      await waitUntil('the server ready again', async () => (await request(`${server.base.replace(/\/api\/v1$/, '')}/readyz`)).status === 200, 30_000);
      const readyAt = Date.now();
      await waitUntil('more reports after the fail-over', () => acknowledged.length >= before + 50, 30_000);
      figures.push(`primary crashed → standby promoted ${promotedAt - crashedAt} ms later (by the test); first report acknowledged ${firstAfterPromote - promotedAt} ms after the promotion, /readyz 200 after ${readyAt - promotedAt} ms; statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    } finally {
      running = false;
      await client;
    }
    expect([...statuses.keys()].filter((s) => s !== 200 && s !== 201 && s !== 503)).toEqual([]);
    const store = await openStore({ databaseUrl: standby.url });
    try {
      const res = await sqlOf(store).query<{ n: number }>('select count(*)::int as n from ipv4_indicators where network = any($1::cidr[])', [acknowledged.map((ip) => `${ip}/32`)]);
      figures.push(`${acknowledged.length} reports acknowledged, ${res.rows[0]!.n} on the promoted standby`);
      expect(res.rows[0]!.n).toBe(acknowledged.length);
    } finally {
      await store.close();
    }
  });
});
