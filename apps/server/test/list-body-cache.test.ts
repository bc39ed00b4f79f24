import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OrganizationConfig } from '@rampart/contracts';
import { testConfig } from '../src/config.ts';
import { cursorCodec } from '../src/services/cursor.ts';
import { createEnrichment } from '../src/services/enrichment/enrichment.ts';
import { Ipv4Lists } from '../src/services/ipv4/lists.ts';
import { Ipv4Mirror } from '../src/services/ipv4/mirror/index.ts';
import { ListBodyCache } from '../src/services/list-body-cache.ts';
import { textListAnswer } from '../src/services/text-list.ts';
import type { Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { seedOrg, startMirrorApp, type TestOrg } from './support/app.ts';
import { driverCases } from './support/databases.ts';

const body = (n: number) => ({ upTo: n, more: false, empty: false, version: `v${n}`, body: Buffer.alloc(n, 97) });

describe('ListBodyCache', () => {
  it('keeps bodies within its byte budget, dropping the least recently used first', () => {
    const cache = new ListBodyCache(100);
    expect(cache.put('a', body(40))).toBe(true);
    expect(cache.put('b', body(40))).toBe(true);
    expect(cache.get('a')?.version).toBe('v40'); // a is now the most recently used
    expect(cache.put('c', body(30))).toBe(true);
    expect(cache.stats).toMatchObject({ bytes: 70, entries: 2, evictions: 1 });
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.body.byteLength).toBe(40);
    expect(cache.get('c')?.body.byteLength).toBe(30);
  });

  it('never keeps a body larger than the budget, and a budget of 0 keeps none', () => {
    const cache = new ListBodyCache(100);
    expect(cache.put('big', body(101))).toBe(false);
    expect(cache.stats).toMatchObject({ bytes: 0, entries: 0, skipped: 1 });
    expect(cache.known('big')).toBe(true);
    expect(new ListBodyCache(0).known('any')).toBe(true);
  });

  it('builds a body once for every request waiting on its key, and keeps none whose generation moved meanwhile', async () => {
    const cache = new ListBodyCache(1000);
    let builds = 0;
    const build = async () => {
      builds++;
      await new Promise((r) => setTimeout(r, 5));
      return body(10);
    };
    const [a, b] = await Promise.all([cache.take('k', build, () => true), cache.take('k', build, () => true)]);
    expect(builds).toBe(1);
    expect(a).toBe(b);
    expect(cache.stats).toMatchObject({ entries: 1, misses: 1 });
    const moved = await cache.take('m', build, () => false);
    expect(moved?.body.byteLength).toBe(10);
    expect(cache.get('m')).toBeUndefined();
    expect(cache.stats).toMatchObject({ entries: 1, skipped: 1 });
  });
});

/**
 * The cached /flat and /ipv4 bodies against bodies rendered afresh (no cache) from the same
 * mirror at the same second: equal bytes, ETags and cursors; a new generation (a report, a
 * decision) and another organization's view never reuse a body; the budget bounds the bytes.
 */
describe.each(driverCases())('list bodies kept between requests on $name', (driver) => {
  let store: Store;
  let mirror: Ipv4Mirror;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;
  const now = Math.floor(Date.now() / 1000);
  const cursors = cursorCodec('a list-body-cache test secret');
  const enrichment = createEnrichment();

  beforeAll(async () => {
    store = await driver.open();
    acme = await seedOrg(store, { credits: 1_000_000 });
    other = await seedOrg(store, { credits: 1_000_000 });
    // acme's view differs from other's: a reserved range and a whitelisted address.
    await store.settings.replaceOrganization(acme.org.id, () => OrganizationConfig.parse({ reserved_ips: ['10.0.1.0/24'] }), 'test');
    await sqlOf(store).query(`insert into ipv4_decisions (org_id, network, decision, ttl) values ($1, '10.0.0.7/32', 0, null)`, [acme.org.id]);
    await sqlOf(store).query(
      `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events)
       select 'RMP-RULE-GID-LBC' || g, ('10.0.' || (g / 256) || '.' || (g % 256) || '/32')::cidr, false,
         1 + (g * 7919) % 1000, $1 - (g * 104729) % 3600, $1, 1 + g % 7, 1 + g % 13
       from generate_series(1, 12000) as g`,
      [now],
    );
    ({ app, mirror } = await startMirrorApp(store, testConfig({ authCacheSeconds: 0, allowNonPublicReports: true })));
  }, 60_000);
  afterAll(async () => {
    await app.close();
    mirror.close();
    await store.close();
  });

  type Kind = 'ipv4' | 'flat';
  /** One answer as the route gives it (the same options), with its body read whole. */
  async function answer(lists: Ipv4Lists, org: TestOrg, kind: Kind, threshold: number, page?: string) {
    const list = kind === 'ipv4' ? await lists.addresses(org.org, threshold) : await lists.csv(org.org, threshold);
    const a = await textListAnswer({ ...list, cursors, filters: { list: kind, min_score: threshold }, page, paginate: kind === 'ipv4', format: 'lines' }, undefined, (err) => {
      throw err;
    });
    const b = a.body();
    let bytes: Buffer;
    if (typeof b === 'string') bytes = Buffer.from(b);
    else if (Buffer.isBuffer(b)) bytes = b;
    else {
      const parts: Buffer[] = [];
      for await (const piece of b) parts.push(Buffer.from(piece as Uint8Array));
      bytes = Buffer.concat(parts);
    }
    return { etag: a.etag, next: a.nextPage, body: bytes.toString() };
  }

  const fresh = () => new Ipv4Lists({ store, enrichment, mirror });
  const cached = (bytes: number) => {
    const cache = new ListBodyCache(bytes);
    return { cache, lists: new Ipv4Lists({ store, enrichment, mirror, cache }) };
  };

  async function atOneSecond<T>(work: () => Promise<T>): Promise<T> {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      return await work();
    } finally {
      vi.useRealTimers();
    }
  }

  it('answers with the bytes, ETag and cursor of a fresh rendering, built once', async () => {
    await atOneSecond(async () => {
      const { cache, lists } = cached(64 * 1024 * 1024);
      for (const [kind, threshold] of [['flat', 2], ['ipv4', 1]] as const) {
        const first = await answer(lists, other, kind, threshold);
        const second = await answer(lists, other, kind, threshold);
        const own = await answer(fresh(), other, kind, threshold);
        expect(first).toEqual(own);
        expect(second).toEqual(own);
        expect(own.body.split('\n').length).toBeGreaterThan(kind === 'ipv4' ? 10_000 : 1000);
      }
      // The second page of /ipv4 by its cursor, then again: cached, the same as a fresh one.
      const p1 = await answer(lists, other, 'ipv4', 1);
      expect(p1.next).not.toBeNull();
      const p2 = await answer(lists, other, 'ipv4', 1, p1.next!);
      expect(await answer(lists, other, 'ipv4', 1, p1.next!)).toEqual(p2);
      expect(p2).toEqual(await answer(fresh(), other, 'ipv4', 1, p1.next!));
      expect(p2.next).toBeNull();
      expect(cache.stats).toMatchObject({ entries: 3, misses: 3, hits: 4 });
    });
  });

  it('renders anew once a report or a decision moved the generation', async () => {
    await atOneSecond(async () => {
      const { cache, lists } = cached(64 * 1024 * 1024);
      const before = await answer(lists, acme, 'flat', 2);
      const report = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: acme.keys.contributor }, payload: { ip: '10.0.200.1', confidence: 0.9, source: 'ssh' } });
      expect([200, 201]).toContain(report.statusCode);
      const afterReport = await answer(lists, acme, 'flat', 2);
      expect(afterReport.body).toContain('\n10.0.200.1,');
      expect(before.body).not.toContain('\n10.0.200.1,');
      expect(afterReport).toEqual(await answer(fresh(), acme, 'flat', 2));
      // A decision written by another replica (straight in the database): whitelisting the new address.
      await sqlOf(store).query(`insert into ipv4_decisions (org_id, network, decision, ttl) values ($1, '10.0.200.1/32', 0, null)`, [acme.org.id]);
      const afterDecision = await answer(lists, acme, 'flat', 2);
      expect(afterDecision.body).not.toContain('\n10.0.200.1,');
      expect(afterDecision.etag).not.toBe(afterReport.etag);
      expect(afterDecision).toEqual(await answer(fresh(), acme, 'flat', 2));
      expect(cache.stats).toMatchObject({ misses: 3, hits: 0 });
    });
  });

  it('never gives one organization the body of another whose view differs', async () => {
    await atOneSecond(async () => {
      const { cache, lists } = cached(64 * 1024 * 1024);
      const forOther = await answer(lists, other, 'flat', 2);
      const forAcme = await answer(lists, acme, 'flat', 2);
      expect(forAcme.body).not.toBe(forOther.body);
      expect(forOther.body).toContain('\n10.0.1.');
      expect(forAcme.body).not.toContain('\n10.0.1.');
      expect(forAcme.body).not.toMatch(/\n10\.0\.0\.7,/);
      expect(forAcme).toEqual(await answer(fresh(), acme, 'flat', 2));
      expect(forOther).toEqual(await answer(fresh(), other, 'flat', 2));
      expect(cache.stats).toMatchObject({ entries: 2, hits: 0 });
    });
  });

  it('holds no more bytes than its budget, and streams a body larger than it unchanged', async () => {
    await atOneSecond(async () => {
      const page = Buffer.byteLength((await answer(fresh(), other, 'ipv4', 1)).body);
      const { cache, lists } = cached(page + 10);
      await answer(lists, other, 'ipv4', 1);
      expect(cache.stats).toMatchObject({ entries: 1, bytes: page });
      const page400 = await answer(lists, other, 'ipv4', 400);
      expect(cache.stats.bytes).toBeLessThanOrEqual(page + 10);
      expect(cache.stats).toMatchObject({ entries: 1, evictions: 1, bytes: Buffer.byteLength(page400.body) });
      const flat = await answer(lists, other, 'flat', 2);
      expect(flat).toEqual(await answer(fresh(), other, 'flat', 2));
      expect(Buffer.byteLength(flat.body)).toBeGreaterThan(page + 10);
      expect(cache.stats).toMatchObject({ entries: 1, skipped: 1 });
      expect(cache.stats.bytes).toBeLessThanOrEqual(page + 10);
    });
  });

  it('still charges every read served from a kept body, and a 304 nothing', async () => {
    const org = await seedOrg(store, { credits: 50 });
    await atOneSecond(async () => {
      const get = (headers: Record<string, string> = {}) => app.inject({ url: '/api/v1/flat/2', headers: { authorization: org.keys.reader, ...headers } });
      const first = await get();
      const second = await get();
      const third = await get();
      expect([first.statusCode, second.statusCode, third.statusCode]).toEqual([200, 200, 200]);
      expect(second.body).toBe(first.body);
      expect(third.headers.etag).toBe(first.headers.etag);
      expect((await get({ 'if-none-match': first.headers.etag as string })).statusCode).toBe(304);
    });
    const after = await store.orgs.byGid(org.org.gid);
    expect(after).toMatchObject({ credit_tokens: 50, debit_tokens: 6 });
  });
});
