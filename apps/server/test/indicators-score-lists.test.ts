import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scoreV32 } from '@rampart/scoring';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

const hex = (algo: string, seed: string) => createHash(algo).update(seed).digest('hex').toUpperCase();

describe.each(driverCases())('score lists of files, domains and URLs on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let globex: TestOrg;
  const get = (org: TestOrg, url: string, headers: Record<string, string> = {}) => app.inject({ url: `/api/v1${url}`, headers: { authorization: org.keys.reader, ...headers } });
  const send = (org: TestOrg, method: 'POST' | 'PUT', url: string, payload: object) =>
    app.inject({ method, url: `/api/v1${url}`, headers: { authorization: org.keys.contributor }, payload });
  const lines = (body: string) => body.split('\n').filter((l) => l.length > 0);

  // trust 1: confidence 1 gives s0 133, confidence 0.2 gives s0 28 (live scores just under them now).
  const HIGH = scoreV32([{ orgTrust: 1, confidence: 1, events: 1 }]).s0;
  const LOW = scoreV32([{ orgTrust: 1, confidence: 0.2, events: 1 }]).s0;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { trust: 1, credits: 100_000 });
    globex = await seedOrg(store, { trust: 1, credits: 100_000 });
    expect([HIGH, LOW]).toEqual([133, 28]);
    for (const [domain, confidence] of [['high.example', 1], ['low.example', 0.2], ['other-high.example', 1]] as const) {
      expect((await send(acme, 'POST', '/domains', { domain, confidence })).statusCode).toBe(200);
      expect((await send(acme, 'POST', '/urls', { url: `http://${domain}/x`, confidence })).statusCode).toBe(200);
    }
    await send(acme, 'POST', '/files', { md5: hex('md5', 'a'), sha256: hex('sha256', 'a'), file_type: 'application/zip', confidence: 1 });
    await send(acme, 'POST', '/files', { md5: hex('md5', 'b'), file_type: 'application/zip', confidence: 1 });
    await send(acme, 'POST', '/files', { sha256: hex('sha256', 'c'), sha1: hex('sha1', 'c'), file_type: 'application/zip', confidence: 0.2 });
    // acme whitelists one high domain and blacklists the low one; globex decides nothing.
    await send(acme, 'PUT', '/domains/other-high.example', { decision: 0 });
    await send(acme, 'PUT', '/domains/low.example', { decision: 1 });
    await send(acme, 'PUT', `/files/${hex('sha1', 'c')}`, { decision: 1 });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('lists exactly what each organization should block, by live score and decisions', async () => {
    const domains = await get(acme, '/domains/score/100?protocol=HTTPS');
    expect(domains.statusCode).toBe(200);
    expect(domains.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(domains.headers['x-coins-cost']).toBe('2');
    expect(domains.headers.next_page).toBeUndefined();
    expect(lines(domains.body)).toEqual(['https://high.example', 'https://low.example']);
    expect(lines((await get(globex, '/domains/score/100?protocol=HTTP')).body)).toEqual(['http://high.example', 'http://other-high.example']);
    expect(lines((await get(globex, '/domains/score/20?protocol=HTTP')).body)).toEqual(['http://high.example', 'http://low.example', 'http://other-high.example']);
    expect((await get(globex, `/domains/score/${HIGH}?protocol=HTTP`)).body).toBe('');
    expect((await get(globex, '/urls/score/100?format=LIST')).body).toBe('http://high.example/x,http://other-high.example/x');
    expect(lines((await get(acme, '/urls/score/2')).body)).toEqual(['http://high.example/x', 'http://low.example/x', 'http://other-high.example/x']);
    expect(lines((await get(acme, '/files/score/100?digest=SHA256')).body)).toEqual([hex('sha256', 'a'), hex('sha256', 'c')]);
    expect(lines((await get(acme, '/files/score/100?digest=MD5')).body)).toEqual([hex('md5', 'a'), hex('md5', 'b')]);
    expect((await get(acme, '/files/score/100?digest=SHA1&format=LIST')).body).toBe(hex('sha1', 'c'));
    expect(lines((await get(globex, '/files/score/100?digest=SHA256')).body)).toEqual([hex('sha256', 'a')]);
  });

  it('enforces every parameter bound with 400 problem+json, uncharged', async () => {
    for (const [url, path] of [
      ['/files/score/1?digest=MD5', 'params.min_score'],
      ['/files/score/1000?digest=MD5', 'params.min_score'],
      ['/files/score/abc?digest=MD5', 'params.min_score'],
      ['/files/score/50', 'querystring.digest'],
      ['/files/score/50?digest=sha256', 'querystring.digest'],
      ['/files/score/50?digest=MD5&format=XML', 'querystring.format'],
      ['/domains/score/50', 'querystring.protocol'],
      ['/domains/score/50?protocol=FTP', 'querystring.protocol'],
      ['/domains/score/1000?protocol=HTTP', 'params.min_score'],
      ['/urls/score/1', 'params.min_score'],
      ['/urls/score/50?format=csv', 'querystring.format'],
      ['/urls/score/50?page=', 'querystring.page'],
    ]) {
      const res = await get(acme, url!);
      expect(res.statusCode, url).toBe(400);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
      expect(res.json().errors.map((e: { path: string }) => e.path), url).toEqual([path]);
      // Validation runs before charging: no coins taken, so no cost header either.
      expect(res.headers['x-coins-cost']).toBeUndefined();
    }
    for (const url of ['/files/score/2?digest=MD5', '/files/score/999?digest=SHA1', '/domains/score/999?protocol=HTTP', '/urls/score/2']) {
      expect((await get(acme, url)).statusCode, url).toBe(200);
    }
  });

  it('answers 304 to If-None-Match until the list changes', async () => {
    const first = await get(globex, '/urls/score/100');
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"/);
    const same = await get(globex, '/urls/score/100', { 'if-none-match': etag });
    expect(same.statusCode).toBe(304);
    expect(same.body).toBe('');
    await send(globex, 'PUT', `/urls/${encodeURIComponent('http://high.example/x')}`, { decision: 0 });
    const changed = await get(globex, '/urls/score/100', { 'if-none-match': etag });
    expect(changed.statusCode).toBe(200);
    expect(lines(changed.body)).toEqual(['http://other-high.example/x']);
    await send(globex, 'POST', '/urls', { url: 'http://new.example/', confidence: 1 });
    const grown = await get(globex, '/urls/score/100', { 'if-none-match': changed.headers.etag as string });
    expect(grown.statusCode).toBe(200);
    expect(lines(grown.body)).toEqual(['http://other-high.example/x', 'http://new.example/']);
  });

  it('pages at 10,000 lines with a signed cursor bound to the filters', async () => {
    const now = Math.floor(Date.now() / 1000);
    await sqlOf(store).query(
      `insert into domain_indicators (value, score, ts, entry_ts, members, events)
       select 'p' || lpad(g::text, 5, '0') || '.paging.example', 500, $1, $1, 1, 1 from generate_series(1, 10005) g`,
      [now],
    );
    const expected = ['high.example', 'other-high.example', ...Array.from({ length: 10005 }, (_, i) => `p${String(i + 1).padStart(5, '0')}.paging.example`)];
    const first = await get(globex, '/domains/score/100?protocol=HTTP');
    expect(first.statusCode).toBe(200);
    const cursor = first.headers.next_page as string;
    expect(cursor).toBeTruthy();
    expect(lines(first.body)).toEqual(expected.slice(0, 10_000).map((d) => `http://${d}`));
    const second = await get(globex, `/domains/score/100?protocol=HTTP&page=${encodeURIComponent(cursor)}`);
    expect(second.statusCode).toBe(200);
    expect(second.headers.next_page).toBeUndefined();
    expect(lines(second.body)).toEqual(expected.slice(10_000).map((d) => `http://${d}`));
    // The cursor continues only the list it was issued for.
    for (const url of [`/domains/score/101?protocol=HTTP&page=${encodeURIComponent(cursor)}`, `/domains/score/100?protocol=HTTPS&page=${encodeURIComponent(cursor)}`, `/urls/score/100?page=${encodeURIComponent(cursor)}`, `/domains/score/100?protocol=HTTP&page=${encodeURIComponent(`${cursor.slice(0, -2)}xx`)}`]) {
      const res = await get(globex, url);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().errors[0].path).toBe('querystring.page');
    }
    const list = await get(globex, '/domains/score/100?protocol=HTTPS&format=LIST');
    expect(list.body.split(',')).toHaveLength(10_000);
    expect(list.body.endsWith(',')).toBe(false);
  });
});
