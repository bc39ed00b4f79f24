import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../src/app.ts';
import { testConfig } from '../src/config.ts';
import type { Ipv4Mirror } from '../src/services/ipv4/mirror/index.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, type TestOrg, startMirrorApp } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

/** 2040-01-01T00:00:00Z: past 2038-01-19, where seconds stop fitting a signed 32-bit integer. */
const AFTER_2038 = 2_208_988_800;

/**
 * Records anchored after 2038 (a clock that has moved on, or an anchor re-delivered then): the
 * mirror must still load and answer the lists exactly as SQL does, not fail over to SQL for good.
 */
describe.each(driverCases())('IPv4 list mirror after 2038 on $name', (driver) => {
  let store: Store;
  let sqlApp: FastifyInstance;
  let mirrorApp: FastifyInstance;
  let mirror: Ipv4Mirror;
  let org: TestOrg;

  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: (AFTER_2038 + 3600) * 1000 });
    store = await driver.open();
    const config = testConfig({ authCacheSeconds: 0 });
    sqlApp = await buildApp({ config, store, ipv4Mirror: null });
    org = await seedOrg(store, { credits: 1_000_000 });
    for (const [k, network, score, age] of [[1, '45.77.1.2/32', 900, 0], [2, '45.77.2.0/24', 500, 3600], [3, '203.0.114.9/32', 200, 60]] as const) {
      await sqlOf(store).query(
        `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ($1, $2::cidr, $3, $4, $5, $5)`,
        [`RMP-RULE-GID-Y2038-${k}`, network, !network.endsWith('/32'), score, AFTER_2038 + 3600 - age],
      );
    }
    ({ app: mirrorApp, mirror } = await startMirrorApp(store, config));
  }, 60_000);
  afterAll(async () => {
    vi.useRealTimers();
    await mirrorApp?.close();
    await sqlApp?.close();
    mirror?.close();
    await store?.close();
  });

  it('loads records whose ts is past 2038 and lists them as SQL does', async () => {
    expect(mirror.state).toBe('ready');
    expect(mirror.size).toBe(3);
    for (const path of ['/ipv4/1', '/ipv4/1?format=LIST', '/flat/2', '/flat/2?list=YES']) {
      const fromSql = await sqlApp.inject({ url: `/api/v1${path}`, headers: { authorization: org.keys.reader } });
      const fromMirror = await mirrorApp.inject({ url: `/api/v1${path}`, headers: { authorization: org.keys.reader } });
      expect(fromSql.statusCode).toBe(200);
      expect(mirror.ready).toBe(true);
      expect({ body: fromMirror.body, etag: fromMirror.headers.etag }, path).toEqual({ body: fromSql.body, etag: fromSql.headers.etag });
    }
    const ipv4 = await mirrorApp.inject({ url: '/api/v1/ipv4/1?format=LIST', headers: { authorization: org.keys.reader } });
    expect(ipv4.body).toBe('45.77.1.2,45.77.2.0/24,203.0.114.9');
  });
});
