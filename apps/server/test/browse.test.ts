import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecisionListResponse, IndicatorListResponse, type DecisionItem, type IndicatorItem } from '@rampart/contracts';
import { liveScore } from '@rampart/scoring';
import type { Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

const SHA256 = 'AB'.repeat(32);
/** acme's view: its two decisions re-delivered the records they cover, at a newer ts. */
const NEWEST_FIRST = ['185.220.101.0/24', '45.77.10.2', '45.77.10.1', '185.220.102.7', '81.2.69.142'];

describe.each(driverCases())('GET /decisions and GET /indicators on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;
  const now = Math.floor(Date.now() / 1000);
  // [network, s0, age in seconds, sources, tags, country, asn]
  const held: Array<[string, number, number, string[], string[], string, string]> = [
    ['45.77.10.1', 500, 0, ['ssh'], [], 'US', 'AS20473'],
    ['45.77.10.2', 130, 60, ['waf'], ['scanner'], 'US', 'AS20473'],
    ['185.220.101.0/24', 900, 120, ['ssh', 'waf'], ['tor'], 'DE', 'AS60729'],
    ['185.220.102.7', 40, 180, ['ssh'], [], 'DE', 'AS60729'],
    ['81.2.69.142', 2, 3600 * 24 * 30, ['ssh'], [], 'GB', 'AS20712'],
  ];

  const get = (url: string, key: string) => app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: key } });
  const decisions = async (query: string, key = acme.keys.reader) => {
    const res = await get(`/decisions${query}`, key);
    expect(res.statusCode, res.body).toBe(200);
    return DecisionListResponse.parse(res.json());
  };
  const indicators = async (query: string, key = acme.keys.reader) => {
    const res = await get(`/indicators${query}`, key);
    expect(res.statusCode, res.body).toBe(200);
    return IndicatorListResponse.parse(res.json());
  };
  const values = (items: Array<DecisionItem | IndicatorItem>) => items.map((i) => i.value);

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { name: 'Browse Acme' });
    other = await seedOrg(store, { name: 'Browse Other' });
    for (const [i, [network, score, age, sources, tags, country, asn]] of held.entries()) {
      const row = await sqlOf(store).query<{ id: number }>(
        `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, sources, tags, ip_info, members, events)
         values ($1, $2::cidr, $3, $4, $5, $5, $6, $7, $8, 1, 1) returning id`,
        [`RMP-RULE-GID-BR${i}`, network, network.includes('/'), score, now - age, sources, tags, JSON.stringify({ country, asn, as_name: `name of ${asn}` })],
      );
      // acme reported the first two; other reported all of them.
      const id = row.rows[0]!.id;
      if (i < 2) await sqlOf(store).query('insert into ipv4_reports (indicator_id, org_id, confidence, first_ts, last_ts) values ($1, $2, 1, $3, $3)', [id, acme.org.id, now - age]);
      await sqlOf(store).query('insert into ipv4_reports (indicator_id, org_id, confidence, first_ts, last_ts) values ($1, $2, 1, $3, $3)', [id, other.org.id, now - age]);
    }
    const put = async (url: string, decision: unknown, key = acme.keys.contributor) => {
      const res = await app.inject({ method: 'PUT', url: `/api/v1${url}`, headers: { authorization: key }, payload: decision as object });
      expect(res.statusCode, `${url} ${res.body}`).toBe(200);
    };
    // In this order, so that "newest first" is this list reversed.
    await put('/ips/45.77.10.2', { decision: 0 });
    await put('/ips/45.77.99.9', { decision: 1, ttl: now + 3600 }); // nobody reported it
    await put('/domains/evil.example.com', { decision: 1 });
    await put(`/urls/${encodeURIComponent('https://evil.example.com/login')}`, { decision: 0 });
    await put(`/files/${SHA256}`, { decision: '1' });
    await put('/ips/185.220.101.0%2F24', { decision: 1 });
    await put('/domains/cleared.example.com', { decision: 1 });
    await put('/domains/cleared.example.com', { decision: -1 });
    // Another organization's decision on the same address stays its own.
    await put('/ips/45.77.10.1', { decision: 1 }, other.keys.contributor);
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('lists every kind of the organization decisions, newest first, without cleared ones', async () => {
    const page = await decisions('');
    expect(page.next_page).toBeNull();
    expect(page.items.map((d) => [d.kind, d.value, d.decision, d.held])).toEqual([
      ['ipv4', '185.220.101.0/24', 1, true],
      ['file', SHA256, 1, false],
      ['url', 'https://evil.example.com/login', 0, false],
      ['domain', 'evil.example.com', 1, false],
      ['ipv4', '45.77.99.9', 1, false],
      ['ipv4', '45.77.10.2', 0, true],
    ]);
    const unreported = page.items.find((d) => d.value === '45.77.99.9')!;
    expect(unreported).toMatchObject({ ttl: now + 3600, expired: false, score: null, live_score: null });
    const network = page.items[0]!;
    // Its anchor carries the live score at the decision's second.
    expect(Math.abs(network.score! - 900)).toBeLessThanOrEqual(1);
    expect(Math.abs(network.live_score! - liveScore(900, 120))).toBeLessThanOrEqual(1);
  });

  it('filters decisions by kind, decision and text', async () => {
    expect(values((await decisions('?kind=ipv4')).items)).toEqual(['185.220.101.0/24', '45.77.99.9', '45.77.10.2']);
    expect(values((await decisions('?decision=0')).items)).toEqual(['https://evil.example.com/login', '45.77.10.2']);
    expect(values((await decisions('?q=EVIL.example')).items)).toEqual(['https://evil.example.com/login', 'evil.example.com']);
    expect(values((await decisions('?kind=domain&decision=0')).items)).toEqual([]);
  });

  it('pages decisions with signed cursors bound to their filters', async () => {
    const seen: string[] = [];
    let page = await decisions('?page_size=4');
    seen.push(...values(page.items));
    expect(page.items).toHaveLength(4);
    page = await decisions(`?page_size=4&page=${encodeURIComponent(page.next_page!)}`);
    seen.push(...values(page.items));
    expect(page.next_page).toBeNull();
    expect(seen).toEqual(values((await decisions('')).items));

    const first = await decisions('?page_size=1&kind=ipv4');
    const otherFilters = await get(`/decisions?page_size=1&kind=file&page=${encodeURIComponent(first.next_page!)}`, acme.keys.reader);
    expect(otherFilters.statusCode).toBe(400);
    expect(otherFilters.json().errors).toEqual([{ path: 'querystring.page', message: 'cursor does not match these filters' }]);
    const tampered = await get(`/decisions?page_size=1&kind=ipv4&page=${encodeURIComponent(first.next_page!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')))}`, acme.keys.reader);
    expect(tampered.statusCode).toBe(400);
    expect(tampered.json().errors[0].path).toBe('querystring.page');
    // Another organization cannot continue acme's cursor.
    const stolen = await get(`/decisions?page_size=1&kind=ipv4&page=${encodeURIComponent(first.next_page!)}`, other.keys.reader);
    expect(stolen.statusCode).toBe(400);
  });

  it('keeps organizations apart', async () => {
    const theirs = await decisions('', other.keys.reader);
    expect(theirs.items.map((d) => [d.kind, d.value, d.decision])).toEqual([['ipv4', '45.77.10.1', 1]]);
    const mine = await indicators('?decision=1');
    expect(values(mine.items)).toEqual(['185.220.101.0/24']);
    const seenByOther = await indicators('?decision=1', other.keys.reader);
    expect(values(seenByOther.items)).toEqual(['45.77.10.1']);
  });

  it('lists the IPv4 indicators newest first with the organization view', async () => {
    const page = await indicators('');
    // The two decided records were delivered again to acme (anchored at the decision's second).
    expect(values(page.items)).toEqual(NEWEST_FIRST);
    const first = page.items[2]!;
    expect(first).toMatchObject({ kind: 'ipv4', gid: 'RMP-RULE-GID-BR0', score: 500, sources: ['ssh'], country: 'US', asn: 'AS20473', as_name: 'name of AS20473', decision: null, ttl: null, members: 1 });
    expect(page.items[1]).toMatchObject({ value: '45.77.10.2', decision: 0 });
  });

  it('filters indicators by band, score, decision, source, tag, reporter, country, AS and text', async () => {
    // Default bands: low [1,60), medium [60,120), high [120,150), critical [150,1000].
    expect(values((await indicators('?band=critical')).items)).toEqual(['185.220.101.0/24', '45.77.10.1']);
    expect(values((await indicators('?band=high')).items)).toEqual(['45.77.10.2']);
    expect(values((await indicators('?band=low')).items)).toEqual(['185.220.102.7']);
    expect(values((await indicators('?min_score=100&max_score=600')).items)).toEqual(['45.77.10.2', '45.77.10.1']);
    expect(values((await indicators('?max_score=1')).items)).toEqual(['81.2.69.142']);
    expect(values((await indicators('?decision=none')).items)).toEqual(['45.77.10.1', '185.220.102.7', '81.2.69.142']);
    expect(values((await indicators('?decision=0')).items)).toEqual(['45.77.10.2']);
    expect(values((await indicators('?source=waf')).items)).toEqual(['185.220.101.0/24', '45.77.10.2']);
    expect(values((await indicators('?tag=tor')).items)).toEqual(['185.220.101.0/24']);
    expect(values((await indicators(`?reporter=${acme.org.gid}`)).items)).toEqual(['45.77.10.2', '45.77.10.1']);
    expect(values((await indicators('?reporter=RMP-GID-NOBODY')).items)).toEqual([]);
    expect(values((await indicators('?country=de')).items)).toEqual(['185.220.101.0/24', '185.220.102.7']);
    expect(values((await indicators('?asn=20712')).items)).toEqual(['81.2.69.142']);
    expect(values((await indicators('?asn=AS20712')).items)).toEqual(['81.2.69.142']);
    expect(values((await indicators('?q=185.220')).items)).toEqual(['185.220.101.0/24', '185.220.102.7']);
  });

  it('pages indicators without repeats', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: IndicatorListResponse = await indicators(`?page_size=2${cursor ? `&page=${encodeURIComponent(cursor)}` : ''}`);
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...values(page.items));
      cursor = page.next_page;
    } while (cursor);
    expect(seen).toEqual(NEWEST_FIRST);
  });

  it('lists domains, URLs and files too', async () => {
    await app.inject({ method: 'POST', url: '/api/v1/domains', headers: { authorization: other.keys.contributor }, payload: { domain: 'evil.example.com', confidence: 1, tags: ['phishing'] } });
    await app.inject({ method: 'POST', url: '/api/v1/urls', headers: { authorization: other.keys.contributor }, payload: { url: 'https://bad.example.net/x', confidence: 1, tags: ['malware'] } });
    await app.inject({ method: 'POST', url: '/api/v1/files', headers: { authorization: other.keys.contributor }, payload: { sha256: SHA256, confidence: 1, file_type: 'application/pdf', tags: ['dropper'] } });
    const domains = await indicators('?kind=domain');
    expect(domains.items.map((d) => [d.value, d.decision, d.tags, d.gid, d.sources])).toEqual([['evil.example.com', 1, ['phishing'], null, []]]);
    expect(values((await indicators('?kind=url&tag=malware')).items)).toEqual(['https://bad.example.net/x']);
    expect((await indicators('?kind=file')).items.map((f) => [f.value, f.decision])).toEqual([[SHA256, 1]]);
    // The decision on the file, set before anyone reported it, now shows on the held record.
    expect((await decisions('?kind=file')).items.map((d) => [d.value, d.held])).toEqual([[SHA256, true]]);
  });

  it('answers bad filters with 400 naming the field', async () => {
    const cases: Array<[string, string]> = [
      ['/indicators?kind=domain&source=ssh', 'querystring.source'],
      ['/indicators?kind=url&country=US', 'querystring.country'],
      ['/indicators?page_size=501', 'querystring.page_size'],
      ['/indicators?page_size=0', 'querystring.page_size'],
      ['/indicators?min_score=9&max_score=3', 'querystring.min_score'],
      ['/indicators?kind=ipv6', 'querystring.kind'],
      ['/indicators?band=severe', 'querystring.band'],
      ['/indicators?country=USA', 'querystring.country'],
      ['/indicators?reporter=acme', 'querystring.reporter'],
      ['/decisions?decision=-1', 'querystring.decision'],
      ['/decisions?page_size=1000', 'querystring.page_size'],
      ['/decisions?page=garbage', 'querystring.page'],
      ['/decisions?unknown=1', 'querystring'],
    ];
    for (const [url, path] of cases) {
      const res = await get(url, acme.keys.reader);
      expect(res.statusCode, url).toBe(400);
      expect((res.json().errors as Array<{ path: string }>).map((e) => e.path), url).toContain(path);
    }
  });

  it('hides indicators the organization delay still holds back', async () => {
    await sqlOf(store).query(`update organizations set delay = '90' where id = $1`, [acme.org.id]);
    try {
      // The app reads the organization with the key; authCacheSeconds is 0 in tests.
      expect(values((await indicators('')).items)).toEqual(['185.220.102.7', '81.2.69.142']);
    } finally {
      await sqlOf(store).query(`update organizations set delay = '0' where id = $1`, [acme.org.id]);
    }
  });

  it('needs a key', async () => {
    expect((await app.inject({ method: 'GET', url: '/api/v1/decisions' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/api/v1/indicators' })).statusCode).toBe(401);
  });
});
