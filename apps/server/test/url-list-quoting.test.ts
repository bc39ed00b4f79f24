import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

describe.each(driverCases())('URL lists carrying hostile URLs on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  const get = (url: string) => app.inject({ url: `/api/v1${url}`, headers: { authorization: acme.keys.reader } });
  const report = (url: string) =>
    app.inject({ method: 'POST', url: '/api/v1/urls', headers: { authorization: acme.keys.contributor }, payload: { url, confidence: 1 } });

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { trust: 1, credits: 100_000 });
    for (const url of [
      'http://a.example/x,y?q=1,2',
      'http://b.example/"quoted",path?k="v"',
      'http://c.example/line\r\nhttp://injected.example/',
      'http://d.example/plain',
    ]) {
      const res = await report(url);
      expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
    }
    // A value that reached the store by another path than POST /urls is not trusted either.
    const now = Math.floor(Date.now() / 1000);
    await sqlOf(store).query(`insert into url_indicators (value, score, ts, entry_ts) values ($1, 500, $2, $2)`, ['http://stored.example/a\r\nb,c', now]);
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('what URL normalization already escapes: quotes are percent-encoded, CR/LF dropped; commas are kept', async () => {
    const rows = await sqlOf(store).query<{ value: string }>('select value from url_indicators where value not like $1 order by value', ['http://stored.example/%']);
    const values = rows.rows.map((r) => r.value);
    expect(values).toContain('http://a.example/x,y?q=1,2');
    expect(values).toContain('http://b.example/%22quoted%22,path?k=%22v%22');
    expect(values).toContain('http://c.example/linehttp://injected.example/');
    expect(values.some((v) => /[\r\n"]/.test(v))).toBe(false);
  });

  it('CSV: a URL with commas is one RFC 4180 field on one line', async () => {
    const res = await get('/urls/score/10');
    expect(res.statusCode).toBe(200);
    const lines = res.body.split('\n').filter((l) => l.length > 0);
    expect(lines).toHaveLength(5);
    expect(lines).toContain('"http://stored.example/a%0D%0Ab,c"');
    expect(lines).toContain('"http://a.example/x,y?q=1,2"');
    expect(lines).toContain('"http://b.example/%22quoted%22,path?k=%22v%22"');
    expect(lines).toContain('http://c.example/linehttp://injected.example/');
    expect(lines).toContain('http://d.example/plain');
  });

  it('LIST: commas inside URLs are percent-encoded, so the list splits into exactly its URLs', async () => {
    const res = await get('/urls/score/10?format=LIST');
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toMatch(/[\r\n]/);
    const entries = res.body.split(',');
    expect(entries).toHaveLength(5);
    expect(entries).toContain('http://stored.example/a%0D%0Ab%2Cc');
    expect(entries).toContain('http://a.example/x%2Cy?q=1%2C2');
    expect(entries).toContain('http://b.example/%22quoted%22%2Cpath?k=%22v%22');
    expect(entries).toContain('http://d.example/plain');
  });
});
