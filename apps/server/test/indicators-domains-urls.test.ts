import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainPage, DomainRecord, UrlPage, UrlRecord } from '@rampart/contracts';
import { scoreV32 } from '@rampart/scoring';
import { eventBus, type PlatformEvent } from '../src/services/events.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

const s0 = (...orgs: Array<[number, number, number]>) => scoreV32(orgs.map(([orgTrust, confidence, events]) => ({ orgTrust, confidence, events }))).s0;

/** Moves the feed clock past max(clock, now) so that pages include everything written so far. */
async function bumpFeedClock(store: Store, seconds: number): Promise<number> {
  const res = await sqlOf(store).query<{ ts: number }>('update feed_clock set ts = greatest(ts, floor(extract(epoch from now()))::bigint) + $1 where id = 1 returning ts', [seconds]);
  return res.rows[0]!.ts;
}

const tags = (n: number) => Array.from({ length: n }, (_, i) => `tag${i}`);

describe.each(driverCases())('domains and URLs on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let globex: TestOrg;
  const send = (method: 'POST' | 'PUT', key: string, url: string, payload: unknown) => app.inject({ method, url: `/api/v1${url}`, headers: { authorization: key }, payload: payload as object });
  const get = (key: string, url: string) => app.inject({ url: `/api/v1${url}`, headers: { authorization: key } });
  const errorPaths = (res: { json(): { errors?: Array<{ path: string }> } }) => (res.json().errors ?? []).map((e) => e.path).sort();

  beforeAll(async () => {
    store = await driver.open();
    // The concurrency test's reader polls as fast as it can.
    app = await testApp(store, { rateLimitPerMinute: 1_000_000 });
    acme = await seedOrg(store, { trust: 0.9, credits: 100_000 });
    globex = await seedOrg(store, { trust: 0.4, credits: 100_000 });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('validates every field and bound of domain and URL reports', async () => {
    const key = acme.keys.contributor;
    const cases: Array<[string, unknown, string[]]> = [
      ['/domains', {}, ['body.domain']],
      ['/domains', { domain: 'localhost' }, ['body.domain']],
      ['/domains', { domain: '203.0.113.9' }, ['body.domain']],
      ['/domains', { domain: 'a..example' }, ['body.domain']],
      ['/domains', { domain: `${'a'.repeat(64)}.example` }, ['body.domain']],
      ['/domains', { domain: 'ok.example', confidence: 1.5 }, ['body.confidence']],
      ['/domains', { domain: 'ok.example', confidence: -0.1 }, ['body.confidence']],
      ['/domains', { domain: 'ok.example', tags: [] }, ['body.tags']],
      ['/domains', { domain: 'ok.example', tags: tags(11) }, ['body.tags']],
      ['/domains', { domain: 'ok.example', tags: ['x', 'x'] }, ['body.tags']],
      ['/urls', {}, ['body.url']],
      ['/urls', { url: 'not a url' }, ['body.url']],
      ['/urls', { url: 'javascript:alert(1)' }, ['body.url']],
      ['/urls', { url: 'mailto:a@example.org' }, ['body.url']],
      ['/urls', { url: `http://example.org/${'a'.repeat(2048)}` }, ['body.url']],
      ['/urls', { url: 'http://example.org/', confidence: '2' }, ['body.confidence']],
      ['/urls', { url: 'http://example.org/', tags: tags(11) }, ['body.tags']],
    ];
    for (const [url, payload, paths] of cases) {
      const res = await send('POST', key, url, payload);
      expect(res.statusCode, `${url} ${JSON.stringify(payload).slice(0, 80)}`).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(errorPaths(res), `${url} ${JSON.stringify(payload).slice(0, 80)}`).toEqual(paths);
    }
    expect((await send('POST', acme.keys.reader, '/domains', { domain: 'ok.example' })).statusCode).toBe(403);
    // The accepted extremes, and the file_type the specification lists but this body does not have.
    for (const [url, payload] of [
      ['/domains', { domain: `${'a'.repeat(63)}.example`, confidence: 0, tags: tags(10), file_type: 'ignored' }],
      ['/domains', { domain: 'bounds.example', confidence: '1', tags: ['one'] }],
      ['/urls', { url: `http://example.org/${'a'.repeat(2000)}`, confidence: 0 }],
      ['/urls', { url: 'ftp://files.example.org/pub/x.bin', confidence: 1, tags: tags(10) }],
    ] as const) {
      const res = await send('POST', key, url, payload);
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toBe('');
    }
    // confidence defaults to 1.
    expect((await send('POST', key, '/urls', { url: 'http://default-confidence.example/' })).statusCode).toBe(200);
    expect((await get(acme.keys.reader, `/urls/${encodeURIComponent('http://default-confidence.example/')}`)).json().score).toBe(s0([0.9, 1, 1]));
  });

  it('normalizes domains so that every spelling is one indicator', async () => {
    const before = Math.floor(Date.now() / 1000);
    for (const spelling of ['Bücher.Example.', 'xn--bcher-kva.example', 'BÜCHER.example']) {
      expect((await send('POST', acme.keys.contributor, '/domains', { domain: spelling, confidence: 0.5, tags: ['phishing'] })).statusCode).toBe(200);
    }
    const after = Math.ceil(Date.now() / 1000);
    const res = await get(acme.keys.reader, `/domains/${encodeURIComponent('bücher.EXAMPLE')}`);
    expect(res.statusCode).toBe(200);
    const record = DomainRecord.parse(res.json());
    // entry_ts is the first report's second and ts the last one's: the three reports may straddle
    // a second boundary (CI saw it), so each is checked against the clock, not against the other.
    expect(record).toEqual({
      domain: 'xn--bcher-kva.example',
      score: s0([0.9, 0.5, 3]),
      ts: record.ts,
      total_reports: 3,
      total_members: 1,
      tags: ['phishing'],
      elk_ts: new Date(record.ts * 1000).toISOString(),
      elk_entry_ts: new Date(record.entry_ts * 1000).toISOString(),
      entry_ts: record.entry_ts,
      decision: null,
    });
    expect(before <= record.entry_ts && record.entry_ts <= record.ts && record.ts <= after).toBe(true);
    expect((await sqlOf(store).query("select count(*)::int as n from domain_indicators where value like '%bcher%'")).rows).toEqual([{ n: 1 }]);
    expect((await get(acme.keys.reader, '/domains/xn--bcher-kva.example.')).json().domain).toBe('xn--bcher-kva.example');
  });

  it('normalizes URLs: scheme and host case, IDNA, default ports, trailing dot, fragment', async () => {
    const spellings = [
      'HTTP://Example.COM.:80/Path/To?q=1#frag',
      'http://example.com/Path/To?q=1',
      'http://EXAMPLE.com:80/Path/To?q=1#other',
    ];
    for (const url of spellings) expect((await send('POST', acme.keys.contributor, '/urls', { url, confidence: 0.7, tags: ['c2'] })).statusCode).toBe(200);
    expect((await send('POST', acme.keys.contributor, '/urls', { url: 'https://Bücher.example:443/a b' })).statusCode).toBe(200);
    const one = UrlRecord.parse((await get(acme.keys.reader, `/urls/${encodeURIComponent('http://example.com/Path/To?q=1')}`)).json());
    expect(one).toMatchObject({ url: 'http://example.com/Path/To?q=1', total_reports: 3, total_members: 1, score: s0([0.9, 0.7, 3]), tags: ['c2'] });
    // The path keeps its case: another path is another URL.
    expect((await get(acme.keys.reader, `/urls/${encodeURIComponent('http://example.com/path/to?q=1')}`)).statusCode).toBe(404);
    const idn = (await get(acme.keys.reader, `/urls/${encodeURIComponent('https://bücher.example/a%20b')}`)).json();
    expect(idn).toMatchObject({ url: 'https://xn--bcher-kva.example/a%20b', total_reports: 1, score: s0([0.9, 1, 1]) });
    expect((await get(acme.keys.reader, `/urls/${encodeURIComponent('HTTPS://XN--BCHER-KVA.EXAMPLE:443/a%20b#x')}`)).json().url).toBe('https://xn--bcher-kva.example/a%20b');
  });

  it('re-anchors when another organization reports or the score changes, and explains the score', async () => {
    await send('POST', acme.keys.contributor, '/domains', { domain: 'anchor.example', confidence: 0.8 });
    const first = (await get(acme.keys.reader, '/domains/anchor.example')).json();
    const bumped = await bumpFeedClock(store, 30);
    await send('POST', acme.keys.contributor, '/domains', { domain: 'anchor.example', confidence: 0.6, tags: ['late'] });
    const repeat = (await get(acme.keys.reader, '/domains/anchor.example')).json();
    // The repeat changed the score: the record is delivered again, anchored at a new ts.
    expect(repeat).toMatchObject({ ts: bumped, entry_ts: first.ts, total_reports: 2, total_members: 1, score: s0([0.9, 0.6, 2]), tags: ['late'] });
    // A repeat that leaves the score as it is (same confidence and, once saturated, same events) keeps the anchor.
    await sqlOf(store).query(`update domain_reports set events = 1000000 where indicator_id = (select id from domain_indicators where value = 'anchor.example')`);
    await send('POST', acme.keys.contributor, '/domains', { domain: 'anchor.example', confidence: 0.6 });
    const saturated = (await get(acme.keys.reader, '/domains/anchor.example')).json();
    await bumpFeedClock(store, 30);
    await send('POST', acme.keys.contributor, '/domains', { domain: 'anchor.example', confidence: 0.6 });
    expect((await get(acme.keys.reader, '/domains/anchor.example')).json()).toMatchObject({ ts: saturated.ts, score: saturated.score });
    await sqlOf(store).query(`update domain_reports set events = 2 where indicator_id = (select id from domain_indicators where value = 'anchor.example')`);
    const later = await bumpFeedClock(store, 30);
    await send('POST', globex.keys.contributor, '/domains', { domain: 'anchor.example', confidence: 1 });
    const res = await get(globex.keys.reader, '/domains/anchor.example?explain=yes');
    const other = res.json();
    expect(other).toMatchObject({ ts: later, entry_ts: first.ts, total_reports: 3, total_members: 2, score: s0([0.9, 0.6, 2], [0.4, 1, 1]) });
    expect(other.explain).toMatchObject({ algorithm: '3.2', s0: other.score, organizations: 2, events: 3, anchor_ts: later, reporters: [{ trust: 0.9, confidence: 0.6, events: 2 }, { trust: 0.4, confidence: 1, events: 1 }] });
    expect((await get(globex.keys.reader, '/domains/anchor.example?explain=maybe')).statusCode).toBe(400);
  });

  it('answers 404 problem+json for unknown domains and URLs and 400 for malformed ones', async () => {
    const domain = await get(acme.keys.reader, '/domains/never-reported.example');
    expect(domain.statusCode).toBe(404);
    expect(domain.json()).toMatchObject({ type: 'https://rampart.dev/problems/not_found', detail: 'domain never-reported.example is not a known indicator' });
    expect(domain.headers['x-coins-cost']).toBe('0');
    const url = await get(acme.keys.reader, `/urls/${encodeURIComponent('https://never.example/x')}`);
    expect(url.statusCode).toBe(404);
    expect(url.json().detail).toBe('url https://never.example/x is not a known indicator');
    for (const [path, param] of [['/domains/localhost', 'params.domain_name'], ['/domains/a_b.example', 'params.domain_name'], [`/urls/${encodeURIComponent('javascript:x')}`, 'params.url'], ['/urls/example.com', 'params.url']]) {
      const res = await get(acme.keys.reader, path!);
      expect(res.statusCode, path).toBe(400);
      expect(errorPaths(res)).toEqual([param]);
    }
  });

  /** Moves the feed clock past every ts written so far, so the feed serves them (a later writer would). */
  const waitFeedSettled = () => bumpFeedClock(store, 1);

  it("applies each organization's decision identically to look-ups and feeds, and publishes decision_changed", async () => {
    await send('POST', globex.keys.contributor, '/domains', { domain: 'decided.example', confidence: 0.2 });
    await send('POST', globex.keys.contributor, '/urls', { url: 'http://decided.example/x', confidence: 0.2 });
    await bumpFeedClock(store, 1);
    const heard: PlatformEvent[] = [];
    const unsubscribe = await eventBus(sqlOf(store)).subscribe((e) => heard.push(e));
    for (const bad of [2, -2, 'x', 0.5]) {
      expect((await send('PUT', acme.keys.contributor, '/domains/decided.example', { decision: bad })).statusCode, String(bad)).toBe(400);
    }
    expect((await send('PUT', acme.keys.reader, '/domains/decided.example', { decision: 0 })).statusCode).toBe(403);
    expect((await send('PUT', acme.keys.contributor, '/domains/DECIDED.example.', { decision: 0 })).statusCode).toBe(200);
    expect((await send('PUT', acme.keys.contributor, `/urls/${encodeURIComponent('HTTP://decided.example:80/x')}`, { decision: '0' })).statusCode).toBe(200);
    const domainsOf = async (org: TestOrg) => DomainPage.parse((await get(org.keys.reader, '/domains?ts=0&page_size=1999')).json()).body.map((r) => r.domain);
    const urlsOf = async (org: TestOrg) => UrlPage.parse((await get(org.keys.reader, '/urls?ts=0&page_size=1999')).json()).body.map((r) => r.url);
    expect((await get(acme.keys.reader, '/domains/decided.example')).json().decision).toBe(0);
    expect((await get(acme.keys.reader, `/urls/${encodeURIComponent('http://decided.example/x')}`)).json().decision).toBe(0);
    // Whitelisted records come again in the deciding organization's feed, carrying decision 0, so a follower learns of it.
    const decidedIn = async (org: TestOrg) => {
      const d = DomainPage.parse((await get(org.keys.reader, '/domains?ts=0&page_size=1999')).json()).body.find((r) => r.domain === 'decided.example');
      const u = UrlPage.parse((await get(org.keys.reader, '/urls?ts=0&page_size=1999')).json()).body.find((r) => r.url === 'http://decided.example/x');
      return [d?.decision, u?.decision];
    };
    await waitFeedSettled();
    expect(await decidedIn(acme)).toEqual([0, 0]);
    expect(await decidedIn(globex)).toEqual([null, null]);
    // A body without decision is 400, like /files.
    const missing = await send('PUT', acme.keys.contributor, '/domains/decided.example', {});
    expect(missing.statusCode).toBe(400);
    expect(errorPaths(missing)).toEqual(['body.decision']);
    expect((await send('PUT', acme.keys.contributor, '/domains/decided.example', { decision: -1 })).statusCode).toBe(200);
    expect((await get(acme.keys.reader, '/domains/decided.example')).json().decision).toBeNull();
    expect((await send('PUT', acme.keys.contributor, '/urls/' + encodeURIComponent('http://decided.example/x'), { decision: 1 })).statusCode).toBe(200);
    expect((await get(acme.keys.reader, `/urls/${encodeURIComponent('http://decided.example/x')}`)).json().decision).toBe(1);
    await waitFeedSettled();
    expect(await decidedIn(acme)).toEqual([null, 1]);
    const deadline = Date.now() + 5000;
    const decisions = () => heard.filter((e) => e.type === 'decision_changed');
    while (decisions().length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await unsubscribe();
    const ts = expect.any(Number);
    expect(decisions()).toEqual([
      { type: 'decision_changed', org_id: acme.org.id, kind: 'domain', indicator: 'decided.example', decision: 0, ttl: null, ts },
      { type: 'decision_changed', org_id: acme.org.id, kind: 'url', indicator: 'http://decided.example/x', decision: 0, ttl: null, ts },
      { type: 'decision_changed', org_id: acme.org.id, kind: 'domain', indicator: 'decided.example', decision: -1, ttl: null, ts },
      { type: 'decision_changed', org_id: acme.org.id, kind: 'url', indicator: 'http://decided.example/x', decision: 1, ttl: null, ts },
    ]);
    // Each push carries the feed second of the record the organization's feed now holds (the agent
    // orders pushes against its pulls with it), never a second behind.
    const fedDomain = DomainPage.parse((await get(acme.keys.reader, '/domains?ts=0&page_size=1999')).json()).body.find((r) => r.domain === 'decided.example')!;
    const fedUrl = UrlPage.parse((await get(acme.keys.reader, '/urls?ts=0&page_size=1999')).json()).body.find((r) => r.url === 'http://decided.example/x')!;
    const last = (kind: string) => decisions().filter((e) => e.type === 'decision_changed' && e.kind === kind).at(-1) as { ts: number };
    expect([last('domain').ts, last('url').ts]).toEqual([fedDomain.ts, fedUrl.ts]);
  });

  it('serves feed pages with version 4, next_ts and page_size bounds, and honours the organization delay', async () => {
    for (const [path, type] of [['/domains', 'Domain'], ['/urls', 'URL']] as const) {
      const page = (await get(acme.keys.reader, `${path}?ts=0`)).json();
      expect(page.header).toMatchObject({ type, version: 4, ts: 0, page_size: 101 });
      expect(page.header.next_ts).toBe(page.body.at(-1)?.ts ?? 0);
      for (const [query, status] of [['ts=0&page_size=100', 400], ['ts=0&page_size=2000', 400], ['ts=-1', 400], ['', 400], ['ts=abc', 400], ['ts=0&page_size=1999', 200], ['ts=0&page_size=101', 200]] as const) {
        expect((await get(acme.keys.reader, `${path}?${query}`)).statusCode, `${path}?${query}`).toBe(status);
      }
    }
    const slow = await seedOrg(store, { credits: 1000 });
    await sqlOf(store).query("update organizations set delay = '100000' where id = $1", [slow.org.id]);
    expect((await get(slow.keys.reader, '/domains?ts=0')).json().body).toEqual([]);
  });

  it('lets a reader that follows next_ts see every indicator, each change at most once and the final state last, while writers report concurrently', async () => {
    const start = await bumpFeedClock(store, 5);
    const writers = 4;
    const perWriter = driver.name === 'postgres' ? 60 : 20;
    const written: string[] = [];
    let done = false;
    const writing = (async () => {
      await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          for (let i = 0; i < perWriter; i += 1) {
            const domain = `w${w}-n${i}.concurrent.example`;
            const res = await send('POST', acme.keys.contributor, '/domains', { domain, confidence: 0.5 });
            expect(res.statusCode).toBe(200);
            written.push(domain);
            // Every tenth domain is reported again by another organization: a second change.
            if (i % 10 === 0) {
              expect((await send('POST', globex.keys.contributor, '/domains', { domain, confidence: 0.5 })).statusCode).toBe(200);
              written.push(domain);
            }
          }
        }),
      );
      done = true;
    })();
    const seen: Array<{ domain: string; ts: number }> = [];
    // Writers take ts >= start: begin just before it, as a client that has read everything older.
    let ts = start - 1;
    const deadline = Date.now() + 120_000;
    const readPage = async (pageSize: number) => {
      const res = await get(globex.keys.reader, `/domains?ts=${ts}&page_size=${pageSize}`);
      expect(res.statusCode).toBe(200);
      const page = DomainPage.parse(res.json());
      for (const r of page.body) if (r.domain.endsWith('.concurrent.example')) seen.push({ domain: r.domain, ts: r.ts });
      ts = page.header.next_ts;
      return page.body.length;
    };
    while (!done) {
      // Poll at a steady pace: PGlite serializes every statement, so a spinning reader starves the writers.
      if ((await readPage(101)) === 0) await new Promise((r) => setTimeout(r, 10));
      expect(Date.now()).toBeLessThan(deadline);
    }
    await writing;
    // Writers are finished: once the clock moves past their last second, the rest is readable.
    await bumpFeedClock(store, 1);
    while ((await readPage(101)) > 0) expect(Date.now()).toBeLessThan(deadline);

    const final = new Map(
      (await sqlOf(store).query<{ value: string; ts: number }>("select value, ts from domain_indicators where value like '%.concurrent.example'")).rows.map((r) => [r.value, r.ts]),
    );
    expect(written).toHaveLength(writers * perWriter + writers * (perWriter / 10));
    expect(new Set(seen.map((s) => s.domain))).toEqual(new Set(written));
    // Never the same change twice; never more often than it changed; the last one seen is the final state.
    expect(new Set(seen.map((s) => `${s.domain}@${s.ts}`)).size).toBe(seen.length);
    const changes = (d: string) => written.filter((w) => w === d).length;
    for (const d of final.keys()) {
      const views = seen.filter((s) => s.domain === d);
      expect(views.length).toBeLessThanOrEqual(changes(d));
      expect(views.at(-1)!.ts).toBe(final.get(d));
    }
    // And the reader received them in ts order.
    expect(seen.map((s) => s.ts)).toEqual([...seen.map((s) => s.ts)].sort((a, b) => a - b));
  });
});
