import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OrganizationConfig } from '@rampart/contracts';
import { buildApp } from '../src/app.ts';
import { testConfig } from '../src/config.ts';
import { createEnrichment } from '../src/services/enrichment/enrichment.ts';
import { Ipv4Mirror } from '../src/services/ipv4/mirror/index.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, type TestOrg, startMirrorApp } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

const HOUR = 3600;
/** Rows seeded: more than a page of 10,000, so the lists page. */
const ROWS = 20_000;
/**
 * Public addresses besides (spread over the address space, CDN ranges, ip_info with only one AS
 * fact or a name that CSV must quote), so the /flat columns from the offline data are compared too.
 */
const PUBLIC = [
  ['8.8.8.8/32', {}],
  ['1.1.1.0/24', {}],
  ['104.16.0.1/32', { as_name: 'Edge "West", Inc.' }],
  ['173.245.48.7/32', { asn: 'AS64501' }],
  ['81.2.69.160/32', { as_name: 'Own, Name', asn: 'AS64502' }],
] as const;
const SPREAD = 3_000;

/**
 * The plain-text IPv4 lists answered from the in-process mirror must be byte for byte what SQL
 * answers (bodies, ETags, next_page cursors), before and after writes made through the API and
 * straight in the database (another replica), for an organization with reserved ranges and
 * decisions and for one without.
 */
describe.each(driverCases())('IPv4 list mirror on $name', (driver) => {
  let store: Store;
  let sqlApp: FastifyInstance;
  let mirrorApp: FastifyInstance;
  let mirror: Ipv4Mirror;
  let acme: TestOrg;
  let other: TestOrg;
  const now = Math.floor(Date.now() / 1000);
  let seeded = 0;

  beforeAll(async () => {
    store = await driver.open();
    // The seeded rows fill 10/8 and the reports below join them there: these replicas run as a lab.
    const config = testConfig({ authCacheSeconds: 0, allowNonPublicReports: true });
    sqlApp = await buildApp({ config, store, ipv4Mirror: null });
    await sqlApp.ready();
    acme = await seedOrg(store, { credits: 1_000_000 });
    other = await seedOrg(store, { credits: 1_000_000 });
    await store.settings.replaceOrganization(acme.org.id, () => OrganizationConfig.parse({ reserved_ips: ['10.0.1.0/24', '10.0.3.7/32'] }), 'test');
    // Deterministic variety: every score, ages from fresh to long decayed, /32s and networks, AS facts on a third.
    await sqlOf(store).query(
      `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events, ip_info)
       select 'RMP-RULE-GID-M' || g,
         case when g % 97 = 0 then ('10.' || (50 + g / 4096) || '.' || ((g / 16) % 256) || '.0/' || (24 + g % 5))::cidr
              else ('10.' || (g / 65536) || '.' || ((g / 256) % 256) || '.' || (g % 256) || '/32')::cidr end,
         g % 97 = 0, 1 + (g * 7919) % 1000, $1 - (g * 104729) % (2000 * $2), $1 - (g * 104729) % (2000 * $2), 1 + g % 7, 1 + g % 13,
         case when g % 3 = 0 then jsonb_build_object('as_name', 'AS-' || (g % 11), 'asn', (64500 + g % 11)::text) else '{}'::jsonb end
       from generate_series(1, $3::integer) as g`,
      [now, HOUR, ROWS],
    );
    await sqlOf(store).query(
      `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events, ip_info)
       select 'RMP-RULE-GID-P' || g, ('0.0.0.0'::inet + ((g::bigint * 2654435761) % 4294967296))::cidr, false,
         1 + (g * 7919) % 1000, $1 - (g * 104729) % (2000 * $2), $1, 1 + g % 5, 1 + g % 9, '{}'::jsonb
       from generate_series(1, $3::integer) as g where not (('0.0.0.0'::inet + ((g::bigint * 2654435761) % 4294967296)) <<= '10.0.0.0/8')`,
      [now, HOUR, SPREAD],
    );
    for (const [k, [network, info]] of PUBLIC.entries()) {
      await sqlOf(store).query(
        `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, ip_info) values ($1, $2::cidr, $3, 900, $4, $4, $5::jsonb)`,
        [`RMP-RULE-GID-PUB${k}`, network, !network.endsWith('/32'), now, JSON.stringify(info)],
      );
    }
    seeded = (await sqlOf(store).query<{ n: number }>('select count(*)::integer as n from ipv4_indicators')).rows[0]!.n;
    const decide = (network: string, decision: number, ttl: number | null) =>
      sqlOf(store).query('insert into ipv4_decisions (org_id, network, decision, ttl) values ($1, $2::cidr, $3, $4)', [acme.org.id, network, decision, ttl]);
    await decide('10.0.0.5/32', 1, now + 86_400);
    await decide('10.0.0.6/32', 1, now - 10);
    await decide('10.0.0.7/32', 0, null);
    await decide('10.0.2.0/24', 0, null);
    await decide('10.0.4.0/24', 1, null);
    ({ app: mirrorApp, mirror } = await startMirrorApp(store, config));
  }, 60_000);
  afterAll(async () => {
    await mirrorApp.close();
    await sqlApp.close();
    mirror.close();
    await store.close();
  });

  const LISTS = ['/ipv4/1', '/ipv4/400', '/ipv4/1?format=LIST', '/flat/2', '/flat/600', '/flat/2?list=YES'];

  /** Every page of one list (following next_page), with status, ETag and cursor of each. */
  async function walk(app: FastifyInstance, key: string, path: string) {
    const pages: Array<{ status: number; etag: unknown; next: unknown; body: string }> = [];
    let page: string | undefined;
    do {
      const url = `/api/v1${path}${page ? `${path.includes('?') ? '&' : '?'}page=${encodeURIComponent(page)}` : ''}`;
      const res = await app.inject({ url, headers: { authorization: key } });
      pages.push({ status: res.statusCode, etag: res.headers.etag, next: res.headers.next_page, body: res.body });
      page = res.headers.next_page as string | undefined;
    } while (page && pages.length < 10);
    return pages;
  }

  async function expectSameLists() {
    // Both answer at one instant (live scores and the listed set move with the clock).
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      await compareLists();
    } finally {
      vi.useRealTimers();
    }
  }

  async function compareLists() {
    for (const org of [acme, other]) {
      for (const path of LISTS) {
        const fromSql = await walk(sqlApp, org.keys.reader, path);
        const fromMirror = await walk(mirrorApp, org.keys.reader, path);
        expect(mirror.ready).toBe(true);
        expect(fromSql.every((p) => p.status === 200)).toBe(true);
        expect(fromMirror, `${path} for ${org === acme ? 'acme' : 'other'}`).toEqual(fromSql);
        // An ETag of one replica is good on the other.
        const again = await sqlApp.inject({ url: `/api/v1${path}`, headers: { authorization: org.keys.reader, 'if-none-match': fromMirror[0]!.etag as string } });
        expect(again.statusCode).toBe(304);
      }
    }
  }

  it('loads every row and answers every list, page, ETag and cursor exactly as SQL does', async () => {
    expect(mirror.state).toBe('ready');
    expect(mirror.size).toBe(seeded);
    const first = await walk(mirrorApp, other.keys.reader, '/ipv4/1');
    expect(first.length).toBeGreaterThan(1);
    const acmeList = (await walk(mirrorApp, acme.keys.reader, '/ipv4/1')).map((p) => p.body).join('').split('\n');
    // Reserved ranges and whitelists are never listed; an unexpired blacklist always is.
    expect(acmeList.filter((ip) => ip.startsWith('10.0.1.') || ip === '10.0.3.7' || ip === '10.0.0.7' || ip.startsWith('10.0.2.'))).toEqual([]);
    expect(acmeList).toContain('10.0.0.5');
    // The CSV columns that come from the offline data, as the mirror writes them (and SQL, below).
    const flat = (await mirrorApp.inject({ url: '/api/v1/flat/2', headers: { authorization: other.keys.reader } })).body.split('\n');
    const line = (ip: string) => flat.find((l) => l.startsWith(`${ip},`))?.split(',').slice(5);
    expect(line('8.8.8.8')).toEqual(['Google LLC', 'AS15169', 'Google', '', 'true']);
    expect(line('1.1.1.0/24')).toEqual(['"Cloudflare', ' Inc."', 'AS13335', '', '', 'false']);
    expect(line('104.16.0.1')).toEqual(['"Edge ""West""', ' Inc."', 'AS13335', 'Cloudflare', '', 'true']);
    expect(line('173.245.48.7')).toEqual(['"Cloudflare', ' Inc."', 'AS64501', 'Cloudflare', '', 'true']);
    expect(line('81.2.69.160')).toEqual(['"Own', ' Name"', 'AS64502', '', '', 'false']);
    expect(flat.filter((l) => /,AS\d+,,,false$/.test(l)).length).toBeGreaterThan(1_000);
    await expectSameLists();
  });

  it('catches up with reports, decisions and rows written by another replica before answering', async () => {
    const before = await mirrorApp.inject({ url: '/api/v1/ipv4/1', headers: { authorization: acme.keys.reader } });
    // Through the API: a new address, repeats from another organization (score and clock move), decisions set and changed.
    for (const ip of ['192.0.2.1', '192.0.2.2', '10.0.0.200']) {
      for (const key of [acme.keys.contributor, other.keys.contributor]) {
        const res = await mirrorApp.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: key }, payload: { ip, confidence: 0.9, source: 'ssh' } });
        expect([200, 201]).toContain(res.statusCode);
      }
    }
    const put = async (ip: string, payload: Record<string, unknown>) =>
      expect((await sqlApp.inject({ method: 'PUT', url: `/api/v1/ips/${encodeURIComponent(ip)}`, headers: { authorization: acme.keys.contributor }, payload })).statusCode).toBe(200);
    await put('10.0.0.5', { decision: 0 });
    await put('10.0.0.9', { decision: 1, ttl: now + 3600 });
    await put('10.0.4.0/24', { decision: -1 });
    // Straight in the database, as another replica would: a row moved, a new network, a decision.
    await sqlOf(store).query(`update ipv4_indicators set score = 1000, ts = $1, updated_at = now() where network = '10.0.0.33/32'`, [now]);
    await sqlOf(store).query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ('RMP-RULE-GID-MNEW', '198.51.100.0/24', true, 900, $1, $1)`, [now]);
    await sqlOf(store).query(`insert into ipv4_decisions (org_id, network, decision, ttl) values ($1, '198.51.100.0/23', 0, null)`, [acme.org.id]);

    const after = await mirrorApp.inject({ url: '/api/v1/ipv4/1', headers: { authorization: acme.keys.reader } });
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect(mirror.ready).toBe(true);
    expect(mirror.size).toBe(seeded + 3);
    await expectSameLists();
    const all = (await walk(mirrorApp, acme.keys.reader, '/ipv4/1')).map((p) => p.body).join('').split('\n');
    expect(all).toContain('192.0.2.1');
    expect(all).toContain('10.0.0.9');
    expect(all).not.toContain('10.0.0.5');
    expect(all).not.toContain('198.51.100.0/24');
    const forOther = (await walk(mirrorApp, other.keys.reader, '/ipv4/1')).map((p) => p.body).join('').split('\n');
    expect(forOther).toContain('198.51.100.0/24');
  });

  it.each(['/ipv4/1', '/ipv4/1?format=LIST', '/flat/2?list=YES'])('%s reads the page bounds from SQL when the mirror stops being ready after the request chose it', async (path) => {
    const own = new Ipv4Mirror(store.ipv4Mirror, createEnrichment());
    const ownApp = await buildApp({ config: testConfig({ authCacheSeconds: 0 }), store, ipv4Mirror: own });
    await ownApp.ready();
    await own.start();
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const plan = own.plan.bind(own);
      // The request has caught up and planned with a ready mirror; it fails before the page is read.
      own.plan = (...args) => {
        const planned = plan(...args);
        own.close();
        return planned;
      };
      const fromSql = await sqlApp.inject({ url: `/api/v1${path}`, headers: { authorization: acme.keys.reader } });
      const res = await ownApp.inject({ url: `/api/v1${path}`, headers: { authorization: acme.keys.reader } });
      expect(own.ready).toBe(false);
      expect(res.statusCode).toBe(200);
      expect(res.body.length).toBeGreaterThan(100_000);
      expect({ body: res.body, etag: res.headers.etag, next: res.headers.next_page }).toEqual({ body: fromSql.body, etag: fromSql.headers.etag, next: fromSql.headers.next_page });
    } finally {
      vi.useRealTimers();
      await ownApp.close();
      own.close();
    }
  });

  it('hands the rest of a streaming list to SQL when the mirror stops being ready (last: it closes the mirror)', async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const fromSql = await sqlApp.inject({ url: '/api/v1/flat/2?list=YES', headers: { authorization: other.keys.reader } });
      const addressText = mirror.addressText.bind(mirror);
      let calls = 0;
      // The real mirror answers the first piece, then closes under the running stream.
      mirror.addressText = (...args) => {
        calls += 1;
        const piece = addressText(...args);
        mirror.close();
        return piece;
      };
      const handedOver = await mirrorApp.inject({ url: '/api/v1/flat/2?list=YES', headers: { authorization: other.keys.reader } });
      expect(calls).toBe(1);
      expect(handedOver.statusCode).toBe(200);
      expect(handedOver.body.split(',').length).toBeGreaterThan(10_000);
      expect(handedOver.body).toBe(fromSql.body);
      expect(handedOver.headers.etag).toBe(fromSql.headers.etag);
    } finally {
      vi.useRealTimers();
    }
  });
});
