import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpMetadata } from '@rampart/contracts';
import { testConfig } from '../../src/config.ts';
import { readCdnDataFile, SHIPPED_CDN_FILE } from '../../src/services/enrichment/cdn-data.ts';
import { utcOffsetSeconds } from '../../src/services/enrichment/ip-metadata.ts';
import type { Store } from '../../src/store/index.ts';
import { driverCases } from '../support/databases.ts';
import { startDnsServer, startSilentDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { seedOrg, testApp, type TestOrg } from '../support/app.ts';

const base = testConfig().tools;

describe('utcOffsetSeconds', () => {
  it('follows daylight saving of the zone at the given instant', () => {
    expect(utcOffsetSeconds('Europe/London', new Date('2026-01-15T12:00:00Z'))).toBe(0);
    expect(utcOffsetSeconds('Europe/London', new Date('2026-07-15T12:00:00Z'))).toBe(3600);
    expect(utcOffsetSeconds('America/Chicago', new Date('2026-01-15T12:00:00Z'))).toBe(-21600);
    expect(utcOffsetSeconds('Asia/Kolkata', new Date('2026-01-15T12:00:00Z'))).toBe(19800);
    expect(utcOffsetSeconds('Not/AZone', new Date())).toBe(0);
  });
});

describe.each(driverCases())('/info tools on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let dns: TestDnsServer;
  let org: TestOrg;
  const get = (url: string, key = org.keys.reader) => app.inject({ url: `/api/v1${url}`, headers: { authorization: key } });

  beforeAll(async () => {
    dns = await startDnsServer({
      a: { 'two.rampart.test': ['192.0.2.10', '192.0.2.11'], 'empty.rampart.test': [] },
      ptr: { '160.69.2.81.in-addr.arpa': 'bracknell.example.net' },
      servfail: ['broken.rampart.test'],
    });
    store = await driver.open();
    app = await testApp(store, { tools: { ...base, dns: { ...base.dns, servers: [dns.address], timeoutMs: 1000 } } });
    org = await seedOrg(store, { credits: 100 });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
    await dns.close();
  });

  it('GET /info/{ipv4} fills the 2.8 record from the offline databases and the PTR', async () => {
    const res = await get('/info/81.2.69.160');
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-coins-cost']).toBe('1');
    expect(res.json()).toEqual({
      status: 'success',
      continent: 'Europe', continentCode: 'EU', country: 'United Kingdom', countryCode: 'GB',
      region: '', regionName: 'England', city: 'Bracknell', district: 'Bracknell Forest', zip: 'RG12',
      lat: 51.40359878540039, lon: -0.7617999911308289,
      timezone: 'Europe/London', offset: utcOffsetSeconds('Europe/London', new Date()), currency: 'GBP',
      isp: 'Andrews & Arnold Ltd', org: 'Andrews & Arnold Ltd', as: 'AS20712 Andrews & Arnold Ltd', asname: 'Andrews & Arnold Ltd',
      reverse: 'bracknell.example.net', mobile: false, proxy: false, hosting: false, query: '81.2.69.160',
    });
    expect(dns.questions).toContain('PTR 160.69.2.81.in-addr.arpa');
  });

  it('marks CDN and cloud addresses as hosting, with an empty reverse when there is no PTR', async () => {
    const body = IpMetadata.parse((await get('/info/151.101.1.69')).json());
    expect(body).toMatchObject({ status: 'success', as: 'AS54113 Fastly, Inc.', hosting: true, reverse: '', query: '151.101.1.69' });
    const google = IpMetadata.parse((await get('/info/8.8.8.8')).json());
    expect(google).toMatchObject({ countryCode: 'US', country: 'United States', continentCode: 'NA', currency: 'USD', timezone: 'America/Chicago', as: 'AS15169 Google LLC', hosting: true });
  });

  it('answers status fail with a message for private and reserved addresses, without a DNS query', async () => {
    const asked = dns.questions.length;
    for (const [ip, message] of [
      ['10.1.2.3', 'private range'],
      ['192.168.0.1', 'private range'],
      ['127.0.0.1', 'private range'],
      ['100.64.0.1', 'private range'],
      ['192.0.2.1', 'reserved range'],
      ['224.0.0.1', 'reserved range'],
      ['0.0.0.0', 'reserved range'],
      ['255.255.255.255', 'reserved range'],
    ]) {
      const res = await get(`/info/${ip}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ status: 'fail', message, query: ip, country: '', as: '', hosting: false, reverse: '', lat: 0 });
    }
    expect(dns.questions.length).toBe(asked);
  });

  it('refuses input that is not an IPv4 address with 400 naming the field', async () => {
    for (const bad of ['999.1.1.1', '1.2.3', 'example.com', '::1']) {
      const res = await get(`/info/${encodeURIComponent(bad)}`);
      expect(res.statusCode, bad).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json().errors.map((e: { path: string }) => e.path)).toEqual(['params.ipv4']);
    }
  });

  it('GET /info/domain resolves A records through the configured server', async () => {
    const res = await get('/info/domain/two.rampart.test');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(['192.0.2.10', '192.0.2.11']);
    expect(dns.questions).toContain('A two.rampart.test');
    expect((await get('/info/domain/empty.rampart.test')).json()).toEqual([]);
  });

  it('answers 404 problem+json for NXDOMAIN and 400 for a malformed name', async () => {
    const res = await get('/info/domain/missing.rampart.test');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ type: 'https://rampart.dev/problems/not_found', detail: 'missing.rampart.test does not exist (NXDOMAIN)' });
    expect(res.headers['x-coins-cost']).toBe('0');
    const bad = await get('/info/domain/not_a_domain');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].path).toBe('params.domain_name');
  });

  it('answers 502 problem+json when the resolver fails (SERVFAIL)', async () => {
    const res = await get('/info/domain/broken.rampart.test');
    expect(res.statusCode).toBe(502);
    expect(res.json()).toMatchObject({ type: 'https://rampart.dev/problems/bad_gateway', detail: 'the DNS resolver failed for broken.rampart.test (ESERVFAIL)' });
  });

  it('answers 504 problem+json when the resolver never answers', async () => {
    const silent = await startSilentDnsServer();
    const slowApp = await testApp(store, { tools: { ...base, dns: { ...base.dns, servers: [silent.address], timeoutMs: 200, tries: 1 } } });
    try {
      const res = await slowApp.inject({ url: '/api/v1/info/domain/two.rampart.test', headers: { authorization: org.keys.reader } });
      expect(res.statusCode).toBe(504);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ type: 'https://rampart.dev/problems/upstream_timeout', status: 504, detail: 'the DNS resolver did not answer for two.rampart.test within 200 ms (1 tries)' });
      expect(silent.queries()).toBeGreaterThanOrEqual(1);
      // A silent resolver costs /info its reverse name only, never the answer.
      const info = await slowApp.inject({ url: '/api/v1/info/81.2.69.160', headers: { authorization: org.keys.reader } });
      expect(info.statusCode).toBe(200);
      expect(info.json()).toMatchObject({ status: 'success', city: 'Bracknell', reverse: '' });
    } finally {
      await slowApp.close();
      await silent.close();
    }
  });

  it('GET /info/cdn/list returns every provider with valid ranges and the data date', async () => {
    const res = await get('/info/cdn/list');
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-coins-cost']).toBeUndefined();
    expect(res.headers['last-modified']).toBe(new Date(`${readCdnDataFile(SHIPPED_CDN_FILE).date}T00:00:00Z`).toUTCString());
    const list = res.json() as Array<{ name: string; addresses: string[] }>;
    expect(list.map((r) => r.name)).toEqual(['Cloudflare', 'Fastly', 'Amazon CloudFront', 'Akamai', 'Google', 'Microsoft Azure Front Door', 'Imperva Incapsula', 'Sucuri']);
    expect(list[0]!.addresses.slice(0, 3)).toEqual(['173.245.48.0/20', '103.21.244.0/22', '103.22.200.0/22']);
  });

  it('needs a key', async () => {
    expect((await app.inject({ url: '/api/v1/info/cdn/list' })).statusCode).toBe(401);
    expect((await app.inject({ url: '/api/v1/info/8.8.8.8' })).statusCode).toBe(401);
  });
});
