import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainPage, DomainRecord, FilePage, FileRecord, Ipv4Page, UrlPage, UrlRecord } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

/**
 * The hot read routes write their responses with plain JSON.stringify (plugins/plain-json.ts)
 * instead of parsing them with their zod schema first. Each body must therefore already be what
 * that parse would give: valid, and with no field the contract does not name (the parse would
 * have stripped it) — here with an ip_info document holding more than the spec's fields,
 * decisions, tags and score explanations.
 */
describe.each(driverCases())('plain JSON read routes on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  const digest = createHash('sha256').update('plain-json').digest('hex');

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 100_000 });
    const now = Math.floor(Date.now() / 1000);
    await sqlOf(store).query(
      `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events, sources, notes, ip_info)
       values ('RMP-RULE-GID-PJ1', '45.77.113.7/32', false, 640, $1, $1, 2, 5, '{ssh,waf}', '{"seen twice"}',
               '{"as_name": "Example", "asn": "AS64500", "country": "NL", "city": "Amsterdam", "extra": {"nested": true}}'::jsonb),
              ('RMP-RULE-GID-PJ2', '45.77.113.0/24', true, 300, $1, $1, 1, 1, '{}', '{}', null)`,
      [now - 60],
    );
    const send = (method: 'POST' | 'PUT', url: string, payload: object) =>
      app.inject({ method, url: `/api/v1${url}`, headers: { authorization: acme.keys.contributor }, payload });
    // A report through the API too (its reporters feed explain=yes), and a decision on the network.
    expect((await send('POST', '/ips', { ip: '45.77.113.7', confidence: 0.8, source: 'ssh', notes: 'again' })).statusCode).toBe(200);
    expect((await send('PUT', `/ips/${encodeURIComponent('45.77.113.0/24')}`, { decision: 1, ttl: now + 3600 })).statusCode).toBe(200);
    expect((await send('POST', '/files', { sha256: digest, file_type: 'application/pdf', file_name: 'a.pdf', tags: ['pdf', 'dropper'] })).statusCode).toBe(200);
    expect((await send('POST', '/domains', { domain: 'Plain-JSON.example.', tags: ['phish'] })).statusCode).toBe(200);
    expect((await send('POST', '/urls', { url: 'https://plain-json.example:443/a?b=c', confidence: 0.7 })).statusCode).toBe(200);
    expect((await send('POST', '/domains', { domain: 'feed.plain-json.example' })).statusCode).toBe(200);
    // A whitelisted domain is looked up with its decision (and comes again in the feed, with decision 0).
    expect((await send('PUT', '/domains/plain-json.example', { decision: 0 })).statusCode).toBe(200);
    // Feed pages leave out the feed clock's current second: move it past what was written.
    await sqlOf(store).query('update feed_clock set ts = greatest(ts, floor(extract(epoch from now()))::bigint) + 5 where id = 1');
    // The IPv4 feed settles a second once the clock has passed it (the decision re-delivered its records in this one).
    const written = Math.floor(Date.now() / 1000);
    while (Math.floor(Date.now() / 1000) <= written) await new Promise((r) => setTimeout(r, 25));
  }, 60_000);
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const url = encodeURIComponent('https://plain-json.example/a?b=c');
  const cases: Array<[string, z.ZodType, (body: any) => number]> = [
    ['/ips/45.77.113.7', Ipv4Page, (b) => b.body.length],
    ['/ips/45.77.113.7?full=yes&explain=yes', Ipv4Page, (b) => b.body.length],
    ['/ips?ts=0', Ipv4Page, (b) => b.body.length],
    ['/ips?ts=0&full=yes&page_size=1000', Ipv4Page, (b) => b.body.length],
    [`/files/${digest.toUpperCase()}`, FileRecord, () => 1],
    [`/files/${digest}?explain=yes`, FileRecord, () => 1],
    ['/files?ts=0', FilePage, (b) => b.body.length],
    ['/domains/plain-json.example?explain=yes', DomainRecord, () => 1],
    ['/domains?ts=0', DomainPage, (b) => b.body.length],
    [`/urls/${url}?explain=yes`, UrlRecord, () => 1],
    [`/urls/${url}`, UrlRecord, () => 1],
    ['/urls?ts=0', UrlPage, (b) => b.body.length],
  ];

  it.each(cases)('GET %s is exactly what its contract parses it to', async (path, schema, records) => {
    const res = await app.inject({ url: `/api/v1${path}`, headers: { authorization: acme.keys.reader } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(res.body);
    expect(records(body)).toBeGreaterThan(0);
    expect(body).toStrictEqual(schema.parse(body));
  });

  it('an IPv4 record carries exactly the spec fields of ip_info, whatever the stored document holds', async () => {
    const res = await app.inject({ url: '/api/v1/ips/45.77.113.7?full=yes', headers: { authorization: acme.keys.reader } });
    const [host, network] = res.json().body;
    expect(host.ip_info).toStrictEqual({ as_domain: '', as_name: 'Example', asn: 'AS64500', continent: '', continent_name: '', country: 'NL', country_name: '' });
    expect(host.info).toMatchObject({ sources: ['ssh', 'waf'], notes: ['seen twice', 'again'] });
    expect(network).toMatchObject({ ip: '45.77.113.0/24', decision: 1 });
  });
});
