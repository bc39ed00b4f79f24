import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ipv4Page, type Ipv4Record } from '@rampart/contracts';
import { testConfig } from '../src/config.ts';
import type { Ipv4Mirror } from '../src/services/ipv4/mirror/index.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, startMirrorApp, testApp, type TestOrg } from './support/app.ts';

/*
 * A decision belongs to its organization whether or not anyone reported the value
 * (decisions.md, Organizations): a blacklist on an address or network nobody reported is listed
 * for that organization exactly as its agents enforce it — in /ipv4/{t} and /flat/{t} at every
 * threshold, in its /ips feed as a record with decision 1 (score 0, its own gid, a ts that moves
 * on every change; a clear delivers it again with decision null), in the look-up — and nowhere
 * for anyone else. A first report at that network becomes the same record (same gid).
 */
describe.each(driverCases())('decisions on values nobody reported on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let mirrorApp: FastifyInstance;
  let mirror: Ipv4Mirror;
  let acme: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    ({ app: mirrorApp, mirror } = await startMirrorApp(store, testConfig({ authCacheSeconds: 0 })));
    acme = await seedOrg(store, { name: 'Unreported Acme', trust: 0.9 });
    other = await seedOrg(store, { name: 'Unreported Other', trust: 0.9 });
  }, 120_000);
  afterAll(async () => {
    await mirrorApp?.close();
    mirror?.close();
    await app?.close();
    await store?.close();
  });

  const put = (ip: string, payload: object, key = acme.keys.contributor) =>
    app.inject({ method: 'PUT', url: `/api/v1/ips/${encodeURIComponent(ip)}`, headers: { authorization: key }, payload });
  const list = async (via: FastifyInstance, path: string, key: string) => {
    const res = await via.inject({ url: `/api/v1/${path}`, headers: { authorization: key } });
    expect(res.statusCode, res.body).toBe(200);
    return res.body.split('\n').filter(Boolean);
  };
  /** The whole feed from 0, as a follower keeps it: the last version of each gid. */
  const feed = async (key: string): Promise<Map<string, Ipv4Record>> => {
    const byGid = new Map<string, Ipv4Record>();
    let ts = 0;
    for (;;) {
      const page = Ipv4Page.parse((await app.inject({ url: `/api/v1/ips?ts=${ts}&page_size=1000`, headers: { authorization: key } })).json());
      if (page.body.length === 0) return byGid;
      for (const r of page.body) byGid.set(r.gid, r);
      ts = page.header.next_ts ?? page.body.at(-1)!.ts;
    }
  };
  const recordOf = async (key: string, ip: string) => [...(await feed(key)).values()].find((r) => r.ip === ip);
  /** Waits until the feed has settled the second `ts` (the settled-second rule). */
  const settled = async (ts = Math.floor(Date.now() / 1000)) => {
    while (Math.floor(Date.now() / 1000) <= ts) await new Promise((r) => setTimeout(r, 25));
  };
  const lookup = async (ip: string, key: string, via = app) => Ipv4Page.parse((await via.inject({ url: `/api/v1/ips/${ip}`, headers: { authorization: key } })).json()).body;

  it('lists a blacklisted unreported address and network at every threshold, for the deciding organization only', async () => {
    expect((await put('45.79.200.1', { decision: 1 })).statusCode).toBe(200);
    expect((await put('45.79.201.0/24', { decision: 1, ttl: Math.floor(Date.now() / 1000) + 3600 })).statusCode).toBe(200);
    for (const via of [app, mirrorApp]) {
      for (const t of [1, 500, 1000]) {
        const lines = await list(via, `ipv4/${t}`, acme.keys.reader);
        expect(lines.filter((l) => l.startsWith('45.79.')), `ipv4/${t}`).toEqual(['45.79.200.1', '45.79.201.0/24']);
        expect((await list(via, `ipv4/${t}`, other.keys.reader)).filter((l) => l.startsWith('45.79.'))).toEqual([]);
      }
      expect((await list(via, 'flat/999?list=YES', acme.keys.reader)).join(',').split(',').filter((l) => l.startsWith('45.79.'))).toEqual(['45.79.200.1', '45.79.201.0/24']);
      const csv = (await list(via, 'flat/2', acme.keys.reader)).filter((l) => l.startsWith('45.79.'));
      expect(csv.map((l) => l.split(',').slice(0, 4).join(','))).toEqual(['45.79.200.1,0.00,0,0', '45.79.201.0/24,0.00,0,0']);
    }
    await settled();
    const record = (await recordOf(acme.keys.reader, '45.79.200.1'))!;
    expect(record).toMatchObject({ ip: '45.79.200.1', score: 0, dec: 0, decision: 1, ttl: null, is_network: false });
    expect(record.gid).toMatch(/^RMP-RULE-GID-[0-9A-F]{32}$/);
    expect((await recordOf(acme.keys.reader, '45.79.201.0/24'))!).toMatchObject({ score: 0, decision: 1, is_network: true });
    expect(await recordOf(other.keys.reader, '45.79.200.1')).toBeUndefined();
    for (const via of [app, mirrorApp]) {
      expect((await lookup('45.79.200.1', acme.keys.reader, via)).map((r) => [r.ip, r.gid, r.decision, r.score])).toEqual([['45.79.200.1', record.gid, 1, 0]]);
      expect((await lookup('45.79.201.7', acme.keys.reader, via)).map((r) => [r.ip, r.decision])).toEqual([['45.79.201.0/24', 1]]);
      expect(await lookup('45.79.200.1', other.keys.reader, via)).toEqual([]);
    }
  });

  it('delivers a clear again with decision null and a newer ts, and lists the value no more', async () => {
    expect((await put('45.79.202.2', { decision: 1 })).statusCode).toBe(200);
    await settled();
    const blocked = (await recordOf(acme.keys.reader, '45.79.202.2'))!;
    expect(blocked.decision).toBe(1);
    await settled(blocked.ts);
    expect((await put('45.79.202.2', { decision: -1 })).statusCode).toBe(200);
    await settled();
    const cleared = (await recordOf(acme.keys.reader, '45.79.202.2'))!;
    expect(cleared).toMatchObject({ gid: blocked.gid, decision: null, ttl: null, score: 0 });
    expect(cleared.ts).toBeGreaterThan(blocked.ts);
    for (const via of [app, mirrorApp]) expect((await list(via, 'ipv4/1', acme.keys.reader)).includes('45.79.202.2')).toBe(false);
    expect(await lookup('45.79.202.2', acme.keys.reader)).toEqual([]);
    // A whitelist is a record too (decision 0), never listed.
    await settled(cleared.ts);
    expect((await put('45.79.202.2', { decision: 0 })).statusCode).toBe(200);
    await settled();
    expect((await recordOf(acme.keys.reader, '45.79.202.2'))!).toMatchObject({ gid: blocked.gid, decision: 0 });
    expect((await list(app, 'ipv4/1', acme.keys.reader)).includes('45.79.202.2')).toBe(false);
  });

  it('a first report at that network becomes the same record (same gid), listed once', async () => {
    expect((await put('45.79.203.3', { decision: 1 })).statusCode).toBe(200);
    await settled();
    const decided = (await recordOf(acme.keys.reader, '45.79.203.3'))!;
    await settled(decided.ts);
    expect((await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: other.keys.contributor }, payload: { ip: '45.79.203.3', confidence: 0.9, source: 'ssh' } })).statusCode).toBe(201);
    await settled();
    const held = (await recordOf(acme.keys.reader, '45.79.203.3'))!;
    expect(held).toMatchObject({ gid: decided.gid, decision: 1 });
    expect(held.score).toBeGreaterThan(0);
    expect(held.ts).toBeGreaterThan(decided.ts);
    expect((await recordOf(other.keys.reader, '45.79.203.3'))!).toMatchObject({ gid: decided.gid, decision: null });
    for (const via of [app, mirrorApp]) expect((await list(via, 'ipv4/1000', acme.keys.reader)).filter((l) => l === '45.79.203.3')).toEqual(['45.79.203.3']);
    expect((await lookup('45.79.203.3', acme.keys.reader)).map((r) => [r.gid, r.decision])).toEqual([[decided.gid, 1]]);
  });

  it("never lists it inside the organization's reserved_ips, and delivers the record again when they change", async () => {
    expect((await put('45.79.204.4', { decision: 1 })).statusCode).toBe(200);
    await settled();
    const before = (await recordOf(acme.keys.reader, '45.79.204.4'))!;
    await settled(before.ts);
    const doc = (await app.inject({ url: '/api/v1/organization/config', headers: { authorization: acme.keys.admin } })).json();
    expect((await app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: acme.keys.admin }, payload: { ...doc, reserved_ips: ['45.79.204.0/24'] } })).statusCode).toBe(200);
    await settled();
    const reserved = (await recordOf(acme.keys.reader, '45.79.204.4'))!;
    expect(reserved).toMatchObject({ gid: before.gid, decision: 0 });
    expect(reserved.ts).toBeGreaterThan(before.ts);
    for (const via of [app, mirrorApp]) expect((await list(via, 'ipv4/1', acme.keys.reader)).includes('45.79.204.4')).toBe(false);
    expect((await app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: acme.keys.admin }, payload: { ...doc, reserved_ips: [] } })).statusCode).toBe(200);
    await settled();
    expect((await recordOf(acme.keys.reader, '45.79.204.4'))!).toMatchObject({ decision: 1 });
    expect((await list(app, 'ipv4/1', acme.keys.reader)).includes('45.79.204.4')).toBe(true);
  });
});
