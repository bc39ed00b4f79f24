import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import type { Store } from '../src/store/index.ts';
import { registerAgent } from './support/agents.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/*
 * Only public addresses are indicators: firewalls apply `/ipv4` and `/flat` as they are, so a
 * report of a private, loopback, documentation, ... address or of a network overlapping one is
 * 400 `non_public_address` naming the range, and a network wider than MAX_REPORT_PREFIX (16)
 * is 400 `network_too_wide`. Decisions are not reports: an organization may whitelist (or
 * block, for itself) its own LAN. ALLOW_NON_PUBLIC_REPORTS=true lets a lab report anything.
 */

/** One address of each special-purpose class, and how the refusal names its range. */
const REFUSED: Array<[string, string]> = [
  ['0.0.0.0', '0.0.0.0/32 (unspecified)'],
  ['0.1.2.3', '0.0.0.0/8 (this network)'],
  ['10.1.2.3', '10.0.0.0/8 (private)'],
  ['172.16.0.1', '172.16.0.0/12 (private)'],
  ['192.168.1.1', '192.168.0.0/16 (private)'],
  ['100.64.0.1', '100.64.0.0/10 (carrier-grade NAT)'],
  ['127.0.0.1', '127.0.0.0/8 (loopback)'],
  ['169.254.1.1', '169.254.0.0/16 (link-local)'],
  ['192.0.0.1', '192.0.0.0/24 (IETF protocol assignments)'],
  ['192.0.2.1', '192.0.2.0/24 (documentation)'],
  ['198.51.100.1', '198.51.100.0/24 (documentation)'],
  ['203.0.113.1', '203.0.113.0/24 (documentation)'],
  ['192.88.99.1', '192.88.99.0/24 (6to4 relay anycast)'],
  ['198.18.0.1', '198.18.0.0/15 (benchmarking)'],
  ['224.0.0.1', '224.0.0.0/4 (multicast)'],
  ['239.255.255.250', '224.0.0.0/4 (multicast)'],
  ['240.0.0.1', '240.0.0.0/4 (reserved)'],
  ['255.255.255.255', '255.255.255.255/32 (broadcast)'],
  ['10.20.0.0/16', '10.0.0.0/8 (private)'],
];

describe.each(driverCases())('only public addresses are reported on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let lab: FastifyInstance;
  let acme: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    // The lab reads its settings from the environment, as `npm start` does.
    lab = await buildApp({ config: { ...loadConfig({ ALLOW_NON_PUBLIC_REPORTS: 'true', MAX_REPORT_PREFIX: '8', MAX_DECISION_PREFIX: '16' }), demo: false, logLevel: 'silent', authCacheSeconds: 0 }, store, ipv4Mirror: null });
    await lab.ready();
    acme = await seedOrg(store, { credits: 100_000 });
  }, 240_000);
  afterAll(async () => {
    await lab?.close();
    await app?.close();
    await store?.close();
  });

  const report = (on: FastifyInstance, payload: object, authorization = acme.keys.contributor) =>
    on.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization }, payload: { confidence: 0.9, source: 'ssh', ...payload } });
  const held = async (ip: string, via = app) => ((await via.inject({ url: `/api/v1/ips/${ip}`, headers: { authorization: acme.keys.reader } })).json() as { body: Array<{ ip: string }> }).body.map((r) => r.ip);

  it('refuses a report of every special-purpose class with 400 non_public_address naming the range and the field', async () => {
    for (const [ip, range] of REFUSED) {
      const res = await report(app, { ip });
      expect(res.statusCode, ip).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      const problem = res.json();
      expect(problem, ip).toMatchObject({ type: 'https://rampart.dev/problems/non_public_address', status: 400, range: range.split(' ')[0] });
      expect(problem.detail, ip).toContain(range);
      expect(problem.errors, ip).toEqual([{ path: 'body.ip', message: expect.stringContaining(range) }]);
    }
    expect(await held('10.1.2.3')).toEqual([]);
    expect(await held('203.0.113.1')).toEqual([]);
  });

  it('refuses a network that overlaps a special range without lying in it, and a report with a decision', async () => {
    const overlap = await report(app, { ip: '192.0.0.0/16' });
    expect(overlap.statusCode).toBe(400);
    expect(overlap.json().detail).toBe('body.ip: 192.0.0.0/16 overlaps 192.0.0.0/24 (IETF protocol assignments), not a public address');
    const blacklist = await report(app, { ip: '192.168.7.7', decision: 1 });
    expect(blacklist.statusCode).toBe(400);
    expect(blacklist.json().type).toBe('https://rampart.dev/problems/non_public_address');
  });

  it('refuses an agent key report of a private address the same way', async () => {
    const agent = await registerAgent(app, acme.keys.admin);
    const res = await report(app, { ip: '10.9.9.9' }, agent.token);
    expect(res.statusCode).toBe(400);
    expect(res.json().type).toBe('https://rampart.dev/problems/non_public_address');
  });

  it('accepts a /16, refuses a /15 with 400 network_too_wide', async () => {
    expect((await report(app, { ip: '45.77.0.0/16' })).statusCode).toBe(201);
    const wide = await report(app, { ip: '45.76.0.0/15' });
    expect(wide.statusCode).toBe(400);
    expect(wide.json()).toMatchObject({
      type: 'https://rampart.dev/problems/network_too_wide',
      max_prefix: 16,
      errors: [{ path: 'body.ip', message: '/15 is wider than /16, the widest network a report may name' }],
    });
    expect((await report(app, { ip: '0.0.0.0/0' })).json().type).toBe('https://rampart.dev/problems/non_public_address');
    expect(await held('45.76.1.1')).toEqual([]);
  });

  it('takes decisions on non-public addresses and wide networks: they are not reports', async () => {
    // A whitelist through POST /ips counts no report; PUT /ips/{ip} never does.
    expect([200, 201]).toContain((await report(app, { ip: '10.0.0.0/8', decision: 0 })).statusCode);
    const put = await app.inject({ method: 'PUT', url: `/api/v1/ips/${encodeURIComponent('192.168.0.0/16')}`, headers: { authorization: acme.keys.contributor }, payload: { decision: 1 } });
    expect(put.statusCode).toBe(200);
    // Neither puts the range in any other organization's list.
    const other = await seedOrg(store, { credits: 1_000 });
    const list = await app.inject({ url: '/api/v1/ipv4/1', headers: { authorization: other.keys.reader } });
    expect(list.body.split('\n').filter((l) => l.startsWith('10.') || l.startsWith('192.168.'))).toEqual([]);
  });

  const decide = (on: FastifyInstance, ip: string, payload: object) =>
    on.inject({ method: 'PUT', url: `/api/v1/ips/${encodeURIComponent(ip)}`, headers: { authorization: acme.keys.contributor }, payload });
  const tooWide = (prefix: number, limit: number, path: string) => ({
    type: 'https://rampart.dev/problems/network_too_wide',
    status: 400,
    max_prefix: limit,
    detail: `${path}: /${prefix} is wider than /${limit}, the widest network a decision may name outside the private-use ranges`,
    errors: [{ path, message: `/${prefix} is wider than /${limit}, the widest network a decision may name outside the private-use ranges` }],
  });

  it('refuses a decision wider than MAX_DECISION_PREFIX (8) on PUT and on POST with decision, and stores nothing', async () => {
    for (const payload of [{ decision: 1 }, { decision: 0 }, { decision: '1', ttl: Math.floor(Date.now() / 1000) + 600 }]) {
      const put = await decide(app, '0.0.0.0/0', payload);
      expect(put.statusCode, JSON.stringify(payload)).toBe(400);
      expect(put.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(put.json()).toMatchObject(tooWide(0, 8, 'params.ip'));
    }
    expect((await decide(app, '45.0.0.0/7', { decision: 1 })).json()).toMatchObject(tooWide(7, 8, 'params.ip'));
    // POST names the width, not the special-purpose range 0.0.0.0/0 also overlaps.
    for (const decision of [0, 1]) expect((await report(app, { ip: '0.0.0.0/0', decision })).json()).toMatchObject(tooWide(0, 8, 'body.ip'));
    expect((await report(app, { ip: '46.0.0.0/6', decision: 0 })).json()).toMatchObject(tooWide(6, 8, 'body.ip'));
    const decisions = (await app.inject({ url: '/api/v1/decisions?kind=ipv4', headers: { authorization: acme.keys.reader } })).json() as { items: Array<{ value: string }> };
    expect(decisions.items.map((d) => d.value).filter((v) => v.endsWith('/0') || v.endsWith('/7') || v.endsWith('/6'))).toEqual([]);
    // /8 is the limit itself; a clear of any width stays possible.
    expect((await decide(app, '45.0.0.0/8', { decision: 1 })).statusCode).toBe(200);
    expect((await decide(app, '45.0.0.0/8', { decision: -1 })).statusCode).toBe(200);
    expect((await decide(app, '0.0.0.0/0', { decision: -1 })).statusCode).toBe(200);
  });

  it('MAX_DECISION_PREFIX=16 refuses a /15 decision but keeps the private-use ranges decidable whole', async () => {
    expect((await decide(lab, '45.76.0.0/15', { decision: 1 })).json()).toMatchObject(tooWide(15, 16, 'params.ip'));
    expect((await decide(lab, '45.77.0.0/16', { decision: 1 })).statusCode).toBe(200);
    for (const ip of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16']) {
      expect((await decide(lab, ip, { decision: 0 })).statusCode, ip).toBe(200);
      expect((await report(lab, { ip, decision: 0 })).statusCode, ip).toBeLessThan(300);
    }
    // A network only partly private is no LAN of the organization's.
    expect((await decide(lab, '172.0.0.0/10', { decision: 0 })).json()).toMatchObject(tooWide(10, 16, 'params.ip'));
  });

  it('ALLOW_NON_PUBLIC_REPORTS=true and MAX_REPORT_PREFIX=8 let a lab report private and wide networks', async () => {
    expect((await report(lab, { ip: '10.1.2.3' })).statusCode).toBe(201);
    expect((await report(lab, { ip: '203.0.113.0/24' })).statusCode).toBe(201);
    expect((await report(lab, { ip: '46.0.0.0/8' })).statusCode).toBe(201);
    const wide = await report(lab, { ip: '46.0.0.0/7' });
    expect(wide.statusCode).toBe(400);
    expect(wide.json().type).toBe('https://rampart.dev/problems/network_too_wide');
    // Asked of the replica that took the report: another one's mirror shows it from the next second on (README, look-ups).
    // Acme's whitelist on 10.0.0.0/8 (a test above), which nobody reported, is a record of its own (migration 0017).
    expect(await held('10.1.2.3', lab)).toEqual(['10.1.2.3', '10.0.0.0/8']);
  });
});
