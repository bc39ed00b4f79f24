import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FilePage, FileRecord, FileTypeList } from '@rampart/contracts';
import { scoreV32 } from '@rampart/scoring';
import { FILE_TYPE_CATALOG } from '../src/services/named/file-type-catalog.ts';
import { eventBus, type PlatformEvent } from '../src/services/events.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

const digests = (seed: string) => ({
  md5: createHash('md5').update(seed).digest('hex'),
  sha1: createHash('sha1').update(seed).digest('hex'),
  sha256: createHash('sha256').update(seed).digest('hex'),
});

/** s0 for reports of one organization each: [trust, confidence, events]. */
const s0 = (...orgs: Array<[number, number, number]>) => scoreV32(orgs.map(([orgTrust, confidence, events]) => ({ orgTrust, confidence, events }))).s0;

/**
 * Moves the feed clock `seconds` past max(clock, now). Pages never include the clock's own
 * second (a writer may still take it), so tests bump it again before reading what they wrote.
 */
async function bumpFeedClock(store: Store, seconds: number): Promise<number> {
  const res = await sqlOf(store).query<{ ts: number }>('update feed_clock set ts = greatest(ts, floor(extract(epoch from now()))::bigint) + $1 where id = 1 returning ts', [seconds]);
  return res.rows[0]!.ts;
}

describe.each(driverCases())('files on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let globex: TestOrg;
  const post = (key: string, payload: unknown) => app.inject({ method: 'POST', url: '/api/v1/files', headers: { authorization: key }, payload: payload as object });
  const get = (key: string, url: string) => app.inject({ url: `/api/v1${url}`, headers: { authorization: key } });
  const put = (key: string, digest: string, decision: unknown) => app.inject({ method: 'PUT', url: `/api/v1/files/${digest}`, headers: { authorization: key }, payload: { decision } });
  const errorPaths = (res: { json(): { errors?: Array<{ path: string }> } }) => (res.json().errors ?? []).map((e) => e.path).sort();

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { trust: 0.8, credits: 100_000 });
    globex = await seedOrg(store, { trust: 0.6, credits: 100_000 });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('serves the file type catalog, which is the contract and has unique names and extensions', async () => {
    const res = await get(acme.keys.reader, '/file_types');
    expect(res.statusCode).toBe(200);
    const list = FileTypeList.parse(res.json());
    expect(list).toEqual(FILE_TYPE_CATALOG);
    expect(list.length).toBeGreaterThanOrEqual(50);
    expect(new Set(list.map((t) => t.name)).size).toBe(list.length);
    const pdf = list.find((t) => t.name === 'application/pdf')!;
    expect(pdf.types).toEqual(['pdf']);
    expect(pdf.furtherReading[0]).toEqual({ title: 'IANA media type application/pdf', url: 'https://www.iana.org/assignments/media-types/application/pdf' });
    for (const t of list) {
      expect(t.name).toMatch(/^[a-z]+\/[a-z0-9.+-]+$/i);
      expect(t.types.length).toBeGreaterThan(0);
      for (const r of t.furtherReading) expect(r.url).toMatch(/^https:\/\//);
    }
  });

  it('validates every field and bound of a file report', async () => {
    const d = digests('bounds');
    const key = acme.keys.contributor;
    const cases: Array<[unknown, number, string[]]> = [
      [{ file_type: 'application/pdf' }, 400, ['body.sha256']],
      [{ file_type: 'application/pdf', md5: d.md5.slice(1) }, 400, ['body.md5']],
      [{ file_type: 'application/pdf', sha1: `${d.sha1}0` }, 400, ['body.sha1']],
      [{ file_type: 'application/pdf', sha256: d.sha256.replace(/^./, 'g') }, 400, ['body.sha256']],
      [{ file_type: 'application/x-unknown', sha256: d.sha256 }, 400, ['body.file_type']],
      [{ md5: d.md5 }, 400, ['body.file_type']],
      [{ file_type: 'application/pdf', md5: d.md5, confidence: 1.01 }, 400, ['body.confidence']],
      [{ file_type: 'application/pdf', md5: d.md5, confidence: -0.01 }, 400, ['body.confidence']],
      [{ file_type: 'application/pdf', md5: d.md5, confidence: 'high' }, 400, ['body.confidence']],
      [{ file_type: 'application/pdf', md5: d.md5, tags: Array.from({ length: 101 }, (_, i) => `t${i}`) }, 400, ['body.tags']],
      [{ file_type: 'application/pdf', md5: d.md5, tags: ['a,b'] }, 400, ['body.tags.0']],
      [{ file_type: 'application/pdf', md5: d.md5, file_name: '' }, 400, ['body.file_name']],
      [{ file_type: 'application/pdf', md5: d.md5, file_name: 'x'.repeat(1025) }, 400, ['body.file_name']],
      [{ file_type: 'application/pdf', md5: d.md5, file_bytes: 'not base64!' }, 400, ['body.file_bytes']],
      [{ file_type: 'application/pdf', md5: d.md5, file_bytes: Buffer.alloc(64 * 1024 + 3).toString('base64') }, 400, ['body.file_bytes']],
    ];
    for (const [payload, status, paths] of cases) {
      const res = await post(key, payload);
      expect(res.statusCode, JSON.stringify(payload).slice(0, 120)).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(errorPaths(res)).toEqual(paths);
    }
    expect((await post(acme.keys.reader, { file_type: 'application/pdf', md5: d.md5 })).statusCode).toBe(403);
    expect((await get(acme.keys.reader, `/files/${d.md5}`)).statusCode).toBe(404);
    // The accepted extremes: confidence 0 and 1 (also as strings), 100 tags, 64 KiB of sample, 1024-character name.
    const ok = await post(key, { file_type: 'APPLICATION/PDF', md5: d.md5, confidence: '0', tags: Array.from({ length: 100 }, (_, i) => `t${i}`), file_bytes: Buffer.alloc(64 * 1024, 7).toString('base64'), file_name: 'n'.repeat(1024) });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toBe('');
    const record = (await get(acme.keys.reader, `/files/${d.md5}`)).json();
    expect(record.file_type).toBe('application/pdf');
    expect(record.tags).toHaveLength(100);
    expect(Buffer.from(record.file_bytes, 'base64')).toEqual(Buffer.alloc(64 * 1024, 7));
    expect(record.score).toBe(s0([0.8, 0, 1]));
    expect((await post(key, { file_type: 'application/pdf', md5: d.md5, confidence: 1 })).statusCode).toBe(200);
  });

  it('stores a report durably, merges repeats by the same organization and re-anchors when the score changes or another organization reports', async () => {
    const d = digests('merge');
    const first = await post(acme.keys.contributor, { md5: d.md5, file_type: 'application/vnd.microsoft.portable-executable', file_name: 'invoice.exe', tags: ['emotet'], confidence: 0.9, file_bytes: Buffer.from('MZ\x90\x00').toString('base64') });
    expect(first.statusCode).toBe(200);
    const r1 = FileRecord.parse((await get(acme.keys.reader, `/files/${d.md5.toUpperCase()}`)).json());
    expect(r1).toEqual({
      md5: d.md5.toUpperCase(),
      sha1: '',
      sha256: '',
      file_bytes: Buffer.from('MZ\x90\x00').toString('base64'),
      file_type: 'application/vnd.microsoft.portable-executable',
      file_name: 'invoice.exe',
      score: s0([0.8, 0.9, 1]),
      ts: r1.ts,
      total_reports: 1,
      total_members: 1,
      tags: ['emotet'],
      elk_ts: new Date(r1.ts * 1000).toISOString(),
      elk_entry_ts: new Date(r1.ts * 1000).toISOString(),
      entry_ts: r1.ts,
      decision: null,
    });
    expect(Math.abs(r1.ts - Date.now() / 1000)).toBeLessThan(120);

    // Same organization, later clock: events and confidence change the score, so the record is anchored again.
    const bumped = await bumpFeedClock(store, 50);
    expect((await post(acme.keys.contributor, { md5: d.md5, sha1: d.sha1, file_type: 'application/vnd.microsoft.portable-executable', tags: ['loader', 'emotet'], confidence: 0.5 })).statusCode).toBe(200);
    const r2 = (await get(acme.keys.reader, `/files/${d.sha1}`)).json();
    expect(r2).toMatchObject({ md5: d.md5.toUpperCase(), sha1: d.sha1.toUpperCase(), sha256: '', ts: bumped, entry_ts: r1.ts, total_reports: 2, total_members: 1, tags: ['emotet', 'loader'], file_name: 'invoice.exe', score: s0([0.8, 0.5, 2]) });

    // Another organization: the anchor moves to the feed clock, entry_ts stays.
    const later = await bumpFeedClock(store, 100);
    expect((await post(globex.keys.contributor, { sha256: d.sha256.toUpperCase(), sha1: d.sha1, file_type: 'application/zip', confidence: 1 })).statusCode).toBe(200);
    const r3 = (await get(globex.keys.reader, `/files/${d.sha256}?explain=yes`)).json();
    expect(r3).toMatchObject({ sha256: d.sha256.toUpperCase(), ts: later, entry_ts: r1.ts, total_reports: 3, total_members: 2, file_type: 'application/zip', score: s0([0.8, 0.5, 2], [0.6, 1, 1]) });
    expect(r3.explain).toMatchObject({ algorithm: '3.2', s0: r3.score, organizations: 2, events: 3, anchor_ts: later });
    // Each digest finds the same single file, in any case.
    for (const digest of [d.md5, d.sha1, d.sha256, d.md5.toUpperCase(), d.sha256.toLowerCase()]) {
      expect((await get(acme.keys.reader, `/files/${digest}`)).json().score).toBe(r3.score);
    }
    expect((await sqlOf(store).query('select count(*)::int as n from file_indicators where md5 = $1', [Buffer.from(d.md5, 'hex')])).rows).toEqual([{ n: 1 }]);
  });

  it('refuses digests that contradict a known file with 409 and changes nothing', async () => {
    const a = digests('conflict-a');
    const b = digests('conflict-b');
    await post(acme.keys.contributor, { md5: a.md5, sha256: a.sha256, file_type: 'text/plain' });
    await post(acme.keys.contributor, { md5: b.md5, file_type: 'text/plain' });
    const before = (await get(acme.keys.reader, `/files/${a.md5}`)).json();
    const contradicts = await post(acme.keys.contributor, { md5: a.md5, sha256: b.sha256, file_type: 'text/plain' });
    expect(contradicts.statusCode).toBe(409);
    expect(errorPaths(contradicts)).toEqual(['body.sha256']);
    const twoFiles = await post(acme.keys.contributor, { md5: b.md5, sha256: a.sha256, file_type: 'text/plain' });
    expect(twoFiles.statusCode).toBe(409);
    expect((await get(acme.keys.reader, `/files/${a.md5}`)).json()).toEqual(before);
  });

  it('answers 404 problem+json for unknown digests and 400 for malformed ones', async () => {
    const unknown = await get(acme.keys.reader, `/files/${'ab'.repeat(32)}`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ type: 'https://rampart.dev/problems/not_found', status: 404, detail: `digest ${'AB'.repeat(32)} is not a known indicator` });
    expect(unknown.headers['x-coins-cost']).toBe('0');
    for (const bad of ['abc', 'g'.repeat(32), 'a'.repeat(33), 'a'.repeat(63)]) {
      const res = await get(acme.keys.reader, `/files/${bad}`);
      expect(res.statusCode).toBe(400);
      expect(errorPaths(res)).toEqual(['params.digest']);
    }
    expect((await get(acme.keys.reader, `/files/${'ab'.repeat(32)}?deep_scan=yes`)).statusCode).toBe(400);
  });

  it('searches the archive only with deep_scan=YES and charges the deep scan only when it runs and succeeds', async () => {
    const d = digests('archived');
    await store.files.archive([{ md5: Buffer.from(d.md5, 'hex'), sha1: Buffer.from(d.sha1, 'hex'), sha256: Buffer.from(d.sha256, 'hex'), file_type: 'application/x-executable', file_name: 'kinsing', score: 640, ts: 1_600_000_000, tags: [] }]);
    expect((await get(acme.keys.reader, `/files/${d.sha1}`)).statusCode).toBe(404);
    expect((await get(acme.keys.reader, `/files/${d.sha1}?deep_scan=NO`)).statusCode).toBe(404);
    const deep = await get(acme.keys.reader, `/files/${d.sha1}?deep_scan=YES`);
    expect(deep.statusCode).toBe(200);
    expect(deep.headers['x-coins-cost']).toBe('6');
    expect(deep.json()).toEqual({
      md5: d.md5.toUpperCase(), sha1: d.sha1.toUpperCase(), sha256: d.sha256.toUpperCase(), file_bytes: null, file_type: 'application/x-executable', file_name: 'kinsing',
      score: 640, ts: 1_600_000_000, total_reports: 1, total_members: 1, tags: [], elk_ts: '2020-09-13T12:26:40.000Z', elk_entry_ts: '2020-09-13T12:26:40.000Z', entry_ts: 1_600_000_000, decision: null,
    });
    const missing = await get(acme.keys.reader, `/files/${'cd'.repeat(20)}?deep_scan=YES`);
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['x-coins-cost']).toBe('0');
    // A digest in the main store is answered from there without the deep-scan price.
    const main = digests('merge');
    const fromMain = await get(acme.keys.reader, `/files/${main.md5}?deep_scan=YES`);
    expect(fromMain.statusCode).toBe(200);
    expect(fromMain.headers['x-coins-cost']).toBe('1');
    const poor = await seedOrg(store, { credits: 3 });
    const refused = await get(poor.keys.reader, `/files/${d.sha1}?deep_scan=YES`);
    expect(refused.statusCode).toBe(402);
    expect(refused.json()).toMatchObject({ balance: 3, price: 6 });
    expect((await store.orgs.byGid(poor.org.gid))!.debit_tokens).toBe(0);
  });

  it("applies each organization's decision to its own look-ups and feed, and publishes decision_changed", async () => {
    const d = digests('decided');
    await post(globex.keys.contributor, { sha256: d.sha256, md5: d.md5, file_type: 'application/pdf', confidence: 0.1 });
    await bumpFeedClock(store, 1);
    const heard: PlatformEvent[] = [];
    const unsubscribe = await eventBus(sqlOf(store)).subscribe((e) => heard.push(e));
    for (const bad of [2, -2, '2', 'yes', null, 0.5]) {
      const res = await put(acme.keys.contributor, d.md5, bad);
      expect(res.statusCode, String(bad)).toBe(400);
      expect(errorPaths(res)).toEqual(['body.decision']);
    }
    expect((await put(acme.keys.reader, d.md5, 0)).statusCode).toBe(403);
    const whitelist = await put(acme.keys.contributor, d.md5.toUpperCase(), '0');
    expect(whitelist.statusCode).toBe(200);
    expect(whitelist.body).toBe('');
    expect((await get(acme.keys.reader, `/files/${d.sha256}`)).json().decision).toBe(0);
    expect((await get(globex.keys.reader, `/files/${d.sha256}`)).json().decision).toBeNull();
    const feedSha = async (org: TestOrg, query = '') => {
      await bumpFeedClock(store, 1);
      return ((await get(org.keys.reader, `/files?ts=0&page_size=1999${query}`)).json() as FilePage).body.map((r) => r.sha256);
    };
    const feedDecision = async (org: TestOrg) => {
      await bumpFeedClock(store, 1);
      return ((await get(org.keys.reader, `/files?ts=0&page_size=1999`)).json() as FilePage).body.find((r) => r.sha256 === d.sha256.toUpperCase())?.decision;
    };
    // The whitelist reaches the deciding organization's feed as decision 0 (a follower must learn of it); the other's is untouched.
    expect(await feedDecision(acme)).toBe(0);
    expect(await feedDecision(globex)).toBeNull();
    expect(await feedSha(acme, '&min_score=999')).toEqual([d.sha256.toUpperCase()]);
    // Blacklisted: passes any min_score; the score alone would not.
    await put(acme.keys.contributor, d.sha256, 1);
    expect((await get(acme.keys.reader, `/files/${d.md5}`)).json().decision).toBe(1);
    expect(await feedSha(acme, '&min_score=999')).toEqual([d.sha256.toUpperCase()]);
    expect(await feedSha(globex, '&min_score=999')).toEqual([]);
    await put(acme.keys.contributor, d.sha256, -1);
    expect((await get(acme.keys.reader, `/files/${d.md5}`)).json().decision).toBeNull();
    expect(await feedSha(acme, '&min_score=999')).toEqual([]);
    const deadline = Date.now() + 5000;
    while (heard.filter((e) => e.type === 'decision_changed').length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await unsubscribe();
    expect(heard.filter((e) => e.type === 'decision_changed')).toEqual([
      { type: 'decision_changed', org_id: acme.org.id, kind: 'file', indicator: d.md5.toUpperCase(), decision: 0, ttl: null, ts: expect.any(Number) },
      { type: 'decision_changed', org_id: acme.org.id, kind: 'file', indicator: d.sha256.toUpperCase(), decision: 1, ttl: null, ts: expect.any(Number) },
      { type: 'decision_changed', org_id: acme.org.id, kind: 'file', indicator: d.sha256.toUpperCase(), decision: -1, ttl: null, ts: expect.any(Number) },
    ]);
  });

  it('pages the feed by (ts, id) with every filter and bound', async () => {
    const base = (await bumpFeedClock(store, 1000)) + 1;
    // Three groups sharing one ts each: 3 files at base, 120 at base+1, 2 at base+2.
    const made: Array<{ sha256: string; ts: number; type: string; name: string; tags: string[]; confidence: number }> = [];
    for (let i = 0; i < 125; i += 1) {
      const ts = i < 3 ? base : i < 123 ? base + 1 : base + 2;
      const d = digests(`feed-${i}`);
      const type = i % 2 ? 'application/zip' : 'text/x-powershell';
      const spec = { sha256: d.sha256.toUpperCase(), ts, type, name: `f${i % 5}.bin`, tags: i % 10 === 0 ? ['apt', `n${i}`] : [`n${i}`], confidence: i === 124 ? 1 : 0.2 };
      made.push(spec);
      expect((await post(acme.keys.contributor, { sha256: d.sha256, file_type: type, file_name: spec.name, tags: spec.tags, confidence: spec.confidence })).statusCode).toBe(200);
      await sqlOf(store).query('update file_indicators set ts = $2 where sha256 = $1', [Buffer.from(d.sha256, 'hex'), ts]);
    }
    await bumpFeedClock(store, 10);
    const page = async (query: string) => {
      const res = await get(acme.keys.reader, `/files?${query}`);
      expect(res.statusCode, query).toBe(200);
      return FilePage.parse(res.json());
    };
    const first = await page(`ts=${base - 1}`);
    expect(first.header).toMatchObject({ type: 'Malware', version: 4, ts: base - 1, page_size: 101 });
    // 3 + 120: the page grows to finish the group at base+1.
    expect(first.body.map((r) => r.sha256)).toEqual(made.slice(0, 123).map((m) => m.sha256));
    expect(first.header.next_ts).toBe(base + 1);
    expect(first.header.user.member_of).toMatchObject({ gid: acme.org.gid, credit_tokens: 100_000 });
    expect(first.body.every((r) => r.file_bytes === null)).toBe(true);
    const second = await page(`ts=${first.header.next_ts}`);
    expect(second.body.map((r) => r.sha256)).toEqual(made.slice(123).map((m) => m.sha256));
    expect(second.header.next_ts).toBe(base + 2);
    const empty = await page(`ts=${base + 2}`);
    expect(empty.body).toEqual([]);
    expect(empty.header.next_ts).toBe(base + 2);

    const shas = async (query: string) => (await page(`ts=${base - 1}&page_size=1999&${query}`)).body.map((r) => r.sha256);
    expect(await shas('file_type=application/zip')).toEqual(made.filter((m) => m.type === 'application/zip').map((m) => m.sha256));
    expect(await shas('file_name=f3.bin')).toEqual(made.filter((m) => m.name === 'f3.bin').map((m) => m.sha256));
    expect(await shas('tags=apt')).toEqual(made.filter((m) => m.tags.includes('apt')).map((m) => m.sha256));
    expect(await shas('tags=n1,n2,nothing')).toEqual([made[1]!.sha256, made[2]!.sha256]);
    expect(await shas('tags=')).toHaveLength(125);
    const high = s0([0.8, 1, 1]);
    expect(await shas(`min_score=${high}`)).toEqual([made[124]!.sha256]);
    expect(await shas(`min_score=${high + 1}`)).toEqual([]);
    expect(await shas(`min_score=${high}&file_type=text/x-powershell`)).toEqual([made[124]!.sha256]);

    const bounds: Array<[string, number, string[]]> = [
      ['page_size=100', 400, ['querystring.page_size']],
      ['page_size=2000', 400, ['querystring.page_size']],
      ['page_size=101.5', 400, ['querystring.page_size']],
      ['min_score=0', 400, ['querystring.min_score']],
      ['min_score=1000', 400, ['querystring.min_score']],
      ['ts=-1', 400, ['querystring.ts']],
      [`tags=${Array.from({ length: 101 }, (_, i) => `t${i}`).join(',')}`, 400, ['querystring.tags']],
      ['tags=a,b,a', 400, ['querystring.tags']],
      ['file_type=application/x-nothing', 400, ['querystring.file_type']],
    ];
    for (const [query, status, paths] of bounds) {
      const res = await get(acme.keys.reader, `/files?ts=0&${query}`);
      expect(res.statusCode, query).toBe(status);
      expect(errorPaths(res), query).toEqual(paths);
    }
    expect((await get(acme.keys.reader, '/files')).statusCode).toBe(400);
    for (const query of ['page_size=1999', 'min_score=999', `tags=${Array.from({ length: 100 }, (_, i) => `t${i}`).join(',')}`, 'page_size=101']) {
      expect((await get(acme.keys.reader, `/files?ts=0&${query}`)).statusCode, query).toBe(200);
    }
  });
});
