import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileRecord, Ipv4Page } from '@rampart/contracts';
import type { Db, Store } from '../src/store/index.ts';
import { FileLookup } from '../src/store/file-lookup.ts';
import { Ipv4Lookup } from '../src/store/ipv4-lookup.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

/** Counts the statements of a name sent through `db` and the keys (first array's length) of each. */
function countStatements(db: Db, name: string): { batches: number[] } {
  const seen = { batches: [] as number[] };
  const query = db.query.bind(db);
  (db as { query: Db['query'] }).query = (sql, params, options) => {
    if (options?.name === name) seen.batches.push((params?.[0] as unknown[]).length);
    return query(sql, params, options);
  };
  return seen;
}

const digests = (seed: string) => ({
  md5: createHash('md5').update(seed).digest('hex'),
  sha1: createHash('sha1').update(seed).digest('hex'),
  sha256: createHash('sha256').update(seed).digest('hex'),
});

/** What of a record must not depend on how it was looked up (`dec` moves with the clock). */
const stable = (r: { gid: string; ip: string; ts: number; score: number; decision: number | null; ttl: number | null; is_network: boolean }) => ({
  gid: r.gid,
  ip: r.ip,
  ts: r.ts,
  score: r.score,
  decision: r.decision,
  ttl: r.ttl,
  is_network: r.is_network,
});

describe.each(driverCases())('batched look-ups on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let globex: TestOrg;
  let initech: TestOrg;
  let holdingBatches: { batches: number[] };

  beforeAll(async () => {
    store = await driver.open();
    holdingBatches = countStatements(sqlOf(store), 'rampart_ipv4_holding_many');
    app = await testApp(store);
    acme = await seedOrg(store, { name: 'Batch Acme', trust: 0.9, credits: 100_000 });
    globex = await seedOrg(store, { name: 'Batch Globex', trust: 0.6, credits: 100_000 });
    initech = await seedOrg(store, { name: 'Batch Initech', credits: 100_000 });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const report = async (ip: string, key = acme.keys.contributor) => {
    const res = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: key }, payload: { ip, confidence: 0.9, source: 'ssh' } });
    expect(res.statusCode).toBeLessThan(300);
  };
  const decide = async (ip: string, key: string, payload: Record<string, unknown>) => {
    const res = await app.inject({ method: 'PUT', url: `/api/v1/ips/${encodeURIComponent(ip)}`, headers: { authorization: key }, payload });
    expect(res.statusCode).toBe(200);
  };
  const lookup = async (ip: string, key: string) => {
    const res = await app.inject({ url: `/api/v1/ips/${ip}?full=yes`, headers: { authorization: key } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-coins-cost']).toBe('1');
    return Ipv4Page.parse(res.json()).body.map(stable);
  };

  it('answers many concurrent look-ups of different and equal addresses as one at a time would', async () => {
    for (let i = 1; i <= 8; i++) await report(`45.18.0.${i}`);
    await report('45.18.0.0/24', globex.keys.contributor);
    await report('45.18.0.0/16');
    await decide('45.18.0.0/28', acme.keys.contributor, { decision: 1 });
    await decide('45.18.0.3', globex.keys.contributor, { decision: 0 });
    const keys = [acme.keys.reader, globex.keys.reader, initech.keys.reader];
    // Held addresses, an unheld one inside the held networks, one outside everything.
    const ips = ['45.18.0.1', '45.18.0.2', '45.18.0.3', '45.18.0.8', '45.18.0.200', '45.19.0.1'];
    const expected = new Map<string, Awaited<ReturnType<typeof lookup>>>();
    for (const ip of ips) for (const key of keys) expected.set(`${ip} ${key}`, await lookup(ip, key));
    // Acme's blacklist on 45.18.0.0/28, which nobody reported, is its own record (migration 0017).
    expect(expected.get(`45.18.0.1 ${acme.keys.reader}`)!.map((r) => r.ip)).toEqual(['45.18.0.1', '45.18.0.0/28', '45.18.0.0/24', '45.18.0.0/16']);
    expect(expected.get(`45.18.0.200 ${acme.keys.reader}`)!.map((r) => r.ip)).toEqual(['45.18.0.0/24', '45.18.0.0/16']);
    expect(expected.get(`45.19.0.1 ${acme.keys.reader}`)).toEqual([]);

    const asks = Array.from({ length: 90 }, (_, n) => ({ ip: ips[(n * 7) % ips.length]!, key: keys[n % keys.length]! }));
    const before = holdingBatches.batches.length;
    const answers = await Promise.all(asks.map((a) => lookup(a.ip, a.key)));
    answers.forEach((answer, n) => expect(answer).toEqual(expected.get(`${asks[n]!.ip} ${asks[n]!.key}`)));
    // Fewer statements than look-ups: they were combined.
    expect(holdingBatches.batches.length - before).toBeLessThan(asks.length);
  });

  it('gives each organization its own decision when their look-ups of one address share a batch', async () => {
    await report('45.19.1.7');
    await decide('45.19.1.7', acme.keys.contributor, { decision: 1 });
    await decide('45.19.1.0/24', globex.keys.contributor, { decision: 0 });
    const lookups = new Ipv4Lookup(sqlOf(store));
    const orgs = [acme.org.id, globex.org.id, initech.org.id];
    const before = holdingBatches.batches.length;
    const rows = await Promise.all(Array.from({ length: 30 }, (_, n) => lookups.holding(orgs[n % 3]!, '45.19.1.7')));
    // Asked in one tick: one statement, each (organization, address) once.
    expect(holdingBatches.batches.slice(before)).toEqual([3]);
    rows.forEach((r, n) => {
      // Globex's whitelist on 45.19.1.0/24, which nobody reported, is a record of its own (migration 0017).
      expect(r.map((x) => x.network)).toEqual(n % 3 === 1 ? ['45.19.1.7/32', '45.19.1.0/24'] : ['45.19.1.7/32']);
      expect(r[0]!.decision).toBe([1, 0, null][n % 3]);
    });
    // The same through the route, where the decision also goes through the policy.
    const keys = [acme.keys.reader, globex.keys.reader, initech.keys.reader];
    const answers = await Promise.all(Array.from({ length: 30 }, (_, n) => lookup('45.19.1.7', keys[n % 3]!)));
    answers.forEach((a, n) => expect(a[0]!.decision).toBe([1, 0, null][n % 3]));
  });

  it('never answers a look-up from before a write acknowledged ahead of it', async () => {
    const lookups = new Ipv4Lookup(sqlOf(store), { maxInFlight: 1 });
    const ip = '45.19.2.9';
    for (let round = 0; round < 3; round++) {
      const early = Array.from({ length: 10 }, () => lookups.holding(acme.org.id, ip));
      // The early batch is sent (and maybe answered) before the write below is acknowledged.
      await new Promise((resolve) => setImmediate(resolve));
      if (round === 0) await report(ip);
      if (round === 1) await decide(ip, acme.keys.contributor, { decision: 1 });
      if (round === 2) await decide(ip, acme.keys.contributor, { decision: 0 });
      const late = await Promise.all(Array.from({ length: 10 }, () => lookups.holding(acme.org.id, ip)));
      for (const rows of late) {
        expect(rows.map((r) => r.network)).toEqual([`${ip}/32`]);
        expect(rows[0]!.decision).toBe([null, 1, 0][round]);
      }
      await Promise.all(early);
    }
    // Through the route: look-ups in flight around a write, then look-ups after it.
    const early = Array.from({ length: 20 }, () => lookup(ip, acme.keys.reader));
    await decide(ip, acme.keys.contributor, { decision: 1 });
    const late = await Promise.all(Array.from({ length: 20 }, () => lookup(ip, acme.keys.reader)));
    for (const rows of late) expect(rows[0]!.decision).toBe(1);
    for (const rows of await Promise.all(early)) expect([0, 1]).toContain(rows[0]!.decision);
  });

  describe('GET /files/{digest}', () => {
    const getFile = (digest: string, key: string, query = '') => app.inject({ url: `/api/v1/files/${digest}${query}`, headers: { authorization: key } });
    const reportFile = async (seed: string, key = acme.keys.contributor) => {
      const d = digests(seed);
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/files',
        headers: { authorization: key },
        payload: { ...d, file_type: 'application/pdf', file_name: `${seed}.pdf`, file_bytes: Buffer.from(seed).toString('base64'), confidence: 0.8, tags: ['batch'] },
      });
      expect(res.statusCode).toBe(200);
      return d;
    };
    const decideFile = async (digest: string, key: string, decision: number) =>
      expect((await app.inject({ method: 'PUT', url: `/api/v1/files/${digest}`, headers: { authorization: key }, payload: { decision } })).statusCode).toBe(200);
    /** Status, coins charged and body: everything but the clock-bound explain figures. */
    const answer = async (digest: string, key: string, query = '') => {
      const res = await getFile(digest, key, query);
      return { status: res.statusCode, cost: res.headers['x-coins-cost'], type: res.headers['content-type'], body: res.statusCode === 200 ? FileRecord.parse(res.json()) : res.json() };
    };

    it('answers concurrent look-ups (any digest kind and case, known, archived and unknown) as one at a time would', async () => {
      const files = [await reportFile('batch-one'), await reportFile('batch-two'), await reportFile('batch-three', globex.keys.contributor)];
      await decideFile(files[0]!.sha1, acme.keys.contributor, 1);
      await decideFile(files[0]!.md5, globex.keys.contributor, 0);
      const old = digests('batch-archived');
      await store.files.archive([{ md5: Buffer.from(old.md5, 'hex'), sha1: Buffer.from(old.sha1, 'hex'), sha256: Buffer.from(old.sha256, 'hex'), file_type: 'application/zip', file_name: 'old.zip', score: 300, ts: 1_600_000_000, tags: [] }]);
      await decideFile(old.sha256, initech.keys.contributor, 1);
      const unknown = digests('batch-unknown');
      const asks: Array<[string, string]> = [];
      for (const f of [...files, old, unknown]) for (const digest of [f.md5, f.sha1.toUpperCase(), f.sha256]) for (const query of ['', '?deep_scan=YES']) asks.push([digest, query]);
      const keys = [acme.keys.reader, globex.keys.reader, initech.keys.reader];
      const expected = new Map<string, Awaited<ReturnType<typeof answer>>>();
      for (const [digest, query] of asks) for (const key of keys) expected.set(`${digest}${query} ${key}`, await answer(digest, key, query));
      expect(expected.get(`${files[0]!.md5} ${acme.keys.reader}`)).toMatchObject({ status: 200, cost: '1', body: { decision: 1, file_name: 'batch-one.pdf' } });
      expect(expected.get(`${files[0]!.sha256} ${globex.keys.reader}`)).toMatchObject({ status: 200, body: { decision: 0 } });
      expect(expected.get(`${old.md5} ${acme.keys.reader}`)).toMatchObject({ status: 404, cost: '0', type: expect.stringContaining('application/problem+json') });
      expect(expected.get(`${old.md5}?deep_scan=YES ${initech.keys.reader}`)).toMatchObject({ status: 200, cost: '6', body: { decision: 1, file_name: 'old.zip', file_bytes: null } });
      expect(expected.get(`${unknown.sha1.toUpperCase()}?deep_scan=YES ${acme.keys.reader}`)).toMatchObject({ status: 404, cost: '0' });

      const many = Array.from({ length: 3 }, () => asks.flatMap(([digest, query]) => keys.map((key) => [digest, query, key] as const))).flat();
      const answers = await Promise.all(many.map(([digest, query, key]) => answer(digest, key, query)));
      answers.forEach((a, n) => expect(a).toEqual(expected.get(`${many[n]![0]}${many[n]![1]} ${many[n]![2]}`)));
    });

    it('gives each organization its own decision in one batch and never answers from before an acknowledged write', async () => {
      const lookups = new FileLookup(sqlOf(store), { maxInFlight: 1 });
      const d = digests('batch-later');
      const early = Array.from({ length: 10 }, () => lookups.lookup(acme.org.id, d.sha256, true));
      await new Promise((resolve) => setImmediate(resolve));
      await reportFile('batch-later');
      await decideFile(d.md5, globex.keys.contributor, 0);
      const orgs = [acme.org.id, globex.org.id, initech.org.id];
      const late = await Promise.all(Array.from({ length: 30 }, (_, n) => lookups.lookup(orgs[n % 3]!, [d.md5, d.sha1, d.sha256.toUpperCase()][n % 3]!, n % 2 === 0)));
      late.forEach((r, n) => {
        expect(r.main).toMatchObject({ md5: d.md5.toUpperCase(), file_name: 'batch-later.pdf', decision: [null, 0, null][n % 3] });
        expect(r.archived).toBeUndefined();
      });
      for (const r of await Promise.all(early)) expect(r.archived).toBeUndefined();
    });
  });
});
