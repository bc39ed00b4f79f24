import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../src/app.ts';
import { testConfig } from '../src/config.ts';
import type { Ipv4Mirror } from '../src/services/ipv4/mirror/index.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, type TestOrg, startMirrorApp } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

/*
 * An organization's `delay` applies to every read path, by one rule (`visibleUpTo`): a record
 * whose ts is later than now - delay is not visible to it yet. The clock is injected (Date only):
 * jumping it past the delay makes the same records visible, on the SQL path and the mirror's.
 */

const DELAY = 3_600;
const MD5 = createHash('md5').update('delayed sample').digest('hex').toUpperCase();
const SHA256 = createHash('sha256').update('delayed sample').digest('hex').toUpperCase();

describe.each(driverCases())('an organization delay hides new records on every read path on $name', (driver) => {
  let store: Store;
  let sqlApp: FastifyInstance;
  let mirrorApp: FastifyInstance;
  let mirror: Ipv4Mirror;
  let reporter: TestOrg;
  let delayed: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    const config = testConfig({ authCacheSeconds: 0 });
    sqlApp = await buildApp({ config, store, ipv4Mirror: null });
    await sqlApp.ready();
    ({ app: mirrorApp, mirror } = await startMirrorApp(store, config));
    reporter = await seedOrg(store, { trust: 1, credits: 100_000 });
    delayed = await seedOrg(store, { trust: 1, credits: 100_000 });
    await sqlOf(store).query('update organizations set delay = $1 where id = $2', [String(DELAY), delayed.org.id]);
  }, 240_000);
  afterAll(async () => {
    vi.useRealTimers();
    await mirrorApp?.close();
    await sqlApp?.close();
    mirror?.close();
    await store?.close();
  });

  const get = (app: FastifyInstance, org: TestOrg, url: string) => app.inject({ url: `/api/v1${url}`, headers: { authorization: org.keys.reader } });
  const post = (url: string, payload: object) => sqlApp.inject({ method: 'POST', url: `/api/v1${url}`, headers: { authorization: reporter.keys.contributor }, payload });

  /** What each read path shows the organization, as comparable values. */
  async function view(org: TestOrg) {
    const text = async (app: FastifyInstance, url: string) => {
      const res = await get(app, org, url);
      expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
      return res.body.split('\n').filter(Boolean);
    };
    const status = async (url: string) => (await get(sqlApp, org, url)).statusCode;
    const overview = (await get(sqlApp, org, '/overview')).json() as { ipv4: { total: number } };
    const lookup = (await get(sqlApp, org, '/ips/45.77.1.2')).json() as { body: Array<{ ip: string }> };
    return {
      ipv4Sql: await text(sqlApp, '/ipv4/2'),
      ipv4Mirror: await text(mirrorApp, '/ipv4/2'),
      flatSql: (await text(sqlApp, '/flat/2')).slice(1).map((l) => l.split(',')[0]),
      flatMirror: (await text(mirrorApp, '/flat/2')).slice(1).map((l) => l.split(',')[0]),
      flatList: await text(mirrorApp, '/flat/2?list=YES'),
      files: await text(sqlApp, '/files/score/2?digest=MD5'),
      domains: await text(sqlApp, '/domains/score/2?protocol=HTTPS'),
      urls: await text(sqlApp, '/urls/score/2'),
      ipLookup: lookup.body.map((r) => r.ip),
      fileLookup: await status(`/files/${SHA256}`),
      domainLookup: await status('/domains/delayed.example'),
      urlLookup: await status(`/urls/${encodeURIComponent('http://delayed.example/x')}`),
      stixIp: await status('/stix2/45.77.1.2'),
      stixDomain: await status('/stix2/delayed.example'),
      stixFile: await status(`/stix2/${MD5}`),
      overview: overview.ipv4.total,
    };
  }

  const SHOWN = {
    // Lists are in indicator order (the address was reported first).
    ipv4Sql: ['45.77.1.2', '45.77.1.0/24'],
    ipv4Mirror: ['45.77.1.2', '45.77.1.0/24'],
    flatSql: ['45.77.1.2', '45.77.1.0/24'],
    flatMirror: ['45.77.1.2', '45.77.1.0/24'],
    flatList: ['45.77.1.2,45.77.1.0/24'],
    files: [MD5],
    domains: ['https://delayed.example'],
    urls: ['http://delayed.example/x'],
    ipLookup: ['45.77.1.2', '45.77.1.0/24'],
    fileLookup: 200,
    domainLookup: 200,
    urlLookup: 200,
    stixIp: 200,
    stixDomain: 200,
    stixFile: 200,
    overview: 2,
  };
  const HIDDEN = {
    ipv4Sql: [],
    ipv4Mirror: [],
    flatSql: [],
    flatMirror: [],
    flatList: [],
    files: [],
    domains: [],
    urls: [],
    ipLookup: [],
    fileLookup: 404,
    domainLookup: 404,
    urlLookup: 404,
    stixIp: 404,
    stixDomain: 404,
    stixFile: 404,
    overview: 0,
  };

  it('shows records to an organization with a delay only once they are older than it', async () => {
    let now = Math.floor(Date.now() / 1000);
    vi.useFakeTimers({ toFake: ['Date'], now: now * 1000 });
    expect((await post('/ips', { ip: '45.77.1.2', confidence: 1, source: 'ssh' })).statusCode).toBe(201);
    expect((await post('/ips', { ip: '45.77.1.0/24', confidence: 1, source: 'ssh' })).statusCode).toBe(201);
    expect((await post('/files', { md5: MD5, sha256: SHA256, file_type: 'application/zip', confidence: 1 })).statusCode).toBe(200);
    expect((await post('/domains', { domain: 'delayed.example', confidence: 1 })).statusCode).toBe(200);
    expect((await post('/urls', { url: 'http://delayed.example/x', confidence: 1 })).statusCode).toBe(200);

    // Organizations without a delay see them at once; the delayed one sees nothing, not even in its feed.
    expect(await view(reporter)).toEqual(SHOWN);
    expect(await view(delayed)).toEqual(HIDDEN);
    expect(((await get(sqlApp, delayed, '/ips?ts=0')).json() as { body: unknown[] }).body).toEqual([]);
    expect(((await get(sqlApp, delayed, '/domains?ts=0')).json() as { body: unknown[] }).body).toEqual([]);

    // Still hidden a second before the delay ends (PostgreSQL writes ts by its own clock: at most
    // a few seconds after `now`), visible once it has passed.
    now += DELAY - 60;
    vi.setSystemTime(now * 1000);
    expect(await view(delayed)).toEqual(HIDDEN);
    now += 120;
    vi.setSystemTime(now * 1000);
    expect(await view(delayed)).toEqual(SHOWN);
  }, 120_000);
});
