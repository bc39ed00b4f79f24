import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { testConfig } from '../src/config.ts';
import { generateWireGuardKeyPair } from '../src/services/vpn/keys.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

describe.each(driverCases())('coins: empty feed pages, 304 and archived STIX digests on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  const now = Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 10_000 });
    await sqlOf(store).query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ('RMP-RULE-GID-COIN1', '100.64.7.1/32', false, 900, $1, $1)`, [now]);
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
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

  it('an empty feed page is served even at a zero balance; a page with records is 402', async () => {
    const broke = await seedOrg(store, { credits: 0 });
    const read = (url: string) => app.inject({ url: `/api/v1${url}`, headers: { authorization: broke.keys.reader } });
    for (const feed of ['/ips', '/files', '/domains', '/urls']) {
      const empty = await read(`${feed}?ts=${now + 10_000}`);
      expect(empty.statusCode, `${feed}: ${empty.body}`).toBe(200);
      expect(empty.json().body, feed).toEqual([]);
      expect(empty.headers['x-coins-cost'], feed).toBe('0');
      expect(empty.headers['x-coins-remaining'], feed).toBe('0');
    }
    const full = await read('/ips?ts=0');
    expect(full.statusCode).toBe(402);
    expect(full.json()).toMatchObject({ type: 'https://rampart.dev/problems/insufficient_coins', balance: 0, price: 1 });
    expect(full.headers['x-coins-cost']).toBe('0');
    // Other priced requests are still refused before any work.
    expect((await read('/ips/100.64.7.1')).statusCode).toBe(402);
  });

  it('a 304 is served even at a zero balance; a list with content is 402', async () => {
    // The /flat CSV carries LiveScore for the request's second, so its ETag moves every second;
    // the clock stands still here so two requests read the same list whatever the machine's load.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    for (const list of ['/ipv4/100', '/flat/2', '/domains/score/2?protocol=HTTPS', '/urls/score/2', '/files/score/2?digest=SHA256']) {
      // Exactly one list's price: the first answer spends the balance to 0.
      const first = await get(list);
      expect(first.statusCode, `${list}: ${first.body}`).toBe(200);
      const price = Number(first.headers['x-coins-cost']);
      const poor = await seedOrg(store, { credits: price });
      const read = (headers: Record<string, string> = {}) => app.inject({ url: `/api/v1${list}`, headers: { authorization: poor.keys.reader, ...headers } });
      const paid = await read();
      expect(paid.statusCode, list).toBe(200);
      expect(paid.headers['x-coins-remaining'], list).toBe('0');
      const unchanged = await read({ 'if-none-match': paid.headers.etag as string });
      expect(unchanged.statusCode, `${list}: ${unchanged.body}`).toBe(304);
      expect(unchanged.headers['x-coins-cost'], list).toBe('0');
      expect(unchanged.headers['x-coins-remaining'], list).toBe('0');
      const again = await read();
      expect(again.statusCode, list).toBe(402);
      expect(again.json(), list).toMatchObject({ type: 'https://rampart.dev/problems/insufficient_coins', balance: 0, price });
    }
  });
});

describe.each(driverCases())('VPN records show the balance /me shows on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    const base = testConfig().tools;
    // COIN_LEASE_MAX: the replica leases coins, so the store's debit_tokens run ahead of what was spent.
    app = await testApp(store, {
      coinLeaseMax: 1024,
      tools: { ...base, vpn: { ...base.vpn, pool: '10.99.0.0/29', endpoint: 'vpn.example.org:51820', serverPublicKey: generateWireGuardKeyPair().publicKey } },
    });
    acme = await seedOrg(store, { credits: 1_000_000 });
  }, 240_000);
  afterAll(async () => {
    await app?.close();
    await store?.close();
  });

  it('in the list and in one license, after coins were leased and spent', async () => {
    const admin = { authorization: acme.keys.admin };
    const created = await app.inject({ method: 'POST', url: '/api/v1/vpn', headers: admin, payload: { account_name: 'laptop' } });
    expect(created.statusCode, created.body).toBe(200);
    // A look-up spends one coin from the lease.
    expect((await app.inject({ url: '/api/v1/ips/45.77.1.2', headers: admin })).statusCode).toBe(200);
    const me = (await app.inject({ url: '/api/v1/me', headers: admin })).json() as { organization: { credit_tokens: number; debit_tokens: number; balance: number } };
    expect(me.organization.balance).toBe(1_000_000 - 10 - 1);
    const stored = (await sqlOf(store).query<{ debit_tokens: number }>('select debit_tokens from organizations where id = $1', [acme.org.id])).rows[0]!;
    // The store holds the lease as spent: without CoinLedger.shown the license would show another balance.
    expect(Number(stored.debit_tokens)).toBeGreaterThan(me.organization.debit_tokens);
    const list = (await app.inject({ url: '/api/v1/vpn', headers: admin })).json() as Array<{ vid: string; user: { member_of: { credit_tokens: number; debit_tokens: number } } }>;
    expect(list).toHaveLength(1);
    expect(list[0]!.user.member_of).toMatchObject({ credit_tokens: me.organization.credit_tokens, debit_tokens: me.organization.debit_tokens });
    const detail = (await app.inject({ url: `/api/v1/vpn/${list[0]!.vid}`, headers: admin })).json() as { user: { member_of: { credit_tokens: number; debit_tokens: number } } };
    expect(detail.user.member_of).toMatchObject({ credit_tokens: me.organization.credit_tokens, debit_tokens: me.organization.debit_tokens });
  });
});
