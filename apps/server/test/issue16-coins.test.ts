import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

describe.each(driverCases())('coins: empty feed pages, 304 and archived STIX digests on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  const now = Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 10_000 });
    await store.db.query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ('RMP-RULE-GID-COIN1', '100.64.7.1/32', false, 900, $1, $1)`, [now]);
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ url: `/api/v1${url}`, headers: { authorization: acme.keys.reader, ...headers } });

  it('an empty feed page (the "nothing new" poll) costs 0 and says so', async () => {
    for (const url of [`/ips?ts=${now + 10_000}`, `/files?ts=${now + 10_000}`, `/domains?ts=${now + 10_000}`, `/urls?ts=${now + 10_000}`]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(200);
      expect(res.json().body, url).toEqual([]);
      expect(res.headers['x-coins-cost'], url).toBe('0');
      expect(Number(res.headers['x-coins-remaining']), url).toBe(10_000);
    }
    // A page with records is still charged.
    const full = await get('/ips?ts=0');
    expect(full.json().body.length).toBeGreaterThan(0);
    expect(full.headers['x-coins-cost']).toBe('1');
  });

  it('a 304 costs 0 and says so', async () => {
    const first = await get('/ipv4/100');
    expect(first.statusCode).toBe(200);
    expect(first.headers['x-coins-cost']).toBe('2');
    const remaining = Number(first.headers['x-coins-remaining']);
    const again = await get('/ipv4/100', { 'if-none-match': first.headers.etag as string });
    expect(again.statusCode).toBe(304);
    expect(again.headers['x-coins-cost']).toBe('0');
    expect(Number(again.headers['x-coins-remaining'])).toBe(remaining);
  });

  it('/stix2/{digest} of a digest only the archive holds is priced as a deep scan', async () => {
    const hex = 'BADC0DE5'.repeat(8);
    await store.files.archive([{ md5: Buffer.alloc(16, 3), sha1: Buffer.alloc(20, 4), sha256: Buffer.from(hex, 'hex'), file_type: 'application/zip', file_name: 'old.zip', score: 700, ts: 1_600_000_000, tags: [] }]);
    const res = await get(`/stix2/${hex}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['x-coins-cost']).toBe('5');
    const ip = await get('/stix2/100.64.7.1');
    expect(ip.statusCode).toBe(200);
    expect(ip.headers['x-coins-cost']).toBe('1');
  });
});
