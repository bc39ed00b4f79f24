import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainPage, FilePage, UrlPage } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/*
 * The IPv4 rule of ipv4-unreported-decisions.test.ts for files, domains and URLs (decisions.md,
 * Organizations; migration 0018): an organization's blacklist on a digest, domain or URL nobody
 * reported is listed for that organization exactly as its agents enforce it — in its score lists
 * at every threshold, in its feed as a record with decision 1 (score 0, a ts that moves on every
 * change; a clear delivers it again with decision null), in the look-up (which shows the record
 * the feed holds, a cleared one too) — and nowhere for anyone else. A first report of the value becomes that record (one entry, listed once).
 */
describe.each(driverCases())('decisions on files, domains and URLs nobody reported on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;
  const tag = randomBytes(4).toString('hex');

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { name: `Named unreported Acme ${tag}`, trust: 0.9 });
    other = await seedOrg(store, { name: `Named unreported Other ${tag}`, trust: 0.9 });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await store?.close();
  });

  const put = async (path: string, decision: number, key = acme.keys.contributor) => {
    const res = await app.inject({ method: 'PUT', url: `/api/v1/${path}`, headers: { authorization: key }, payload: { decision } });
    expect(res.statusCode, res.body).toBe(200);
  };
  const list = async (path: string, key = acme.keys.reader) => {
    const res = await app.inject({ url: `/api/v1/${path}`, headers: { authorization: key } });
    expect(res.statusCode, res.body).toBe(200);
    return res.body.split('\n').filter(Boolean);
  };
  /** Waits until the feeds have settled the current second (the settled-second rule). */
  const settled = async () => {
    const ts = Math.floor(Date.now() / 1000);
    while (Math.floor(Date.now() / 1000) <= ts) await new Promise((r) => setTimeout(r, 25));
  };
  /** The whole feed of a kind from 0, parsed by its page schema. */
  const feed = async (kind: 'domains' | 'urls' | 'files', key = acme.keys.reader) => {
    const schema = kind === 'domains' ? DomainPage : kind === 'urls' ? UrlPage : FilePage;
    const records: Array<Record<string, unknown> & { ts: number; score: number; decision: 0 | 1 | null }> = [];
    for (let ts = 0; ; ) {
      const res = await app.inject({ url: `/api/v1/${kind}?ts=${ts}&page_size=1000`, headers: { authorization: key } });
      expect(res.statusCode, res.body).toBe(200);
      const page = schema.parse(res.json());
      if (page.body.length === 0) return records;
      records.push(...(page.body as typeof records));
      ts = page.header.next_ts ?? page.body.at(-1)!.ts;
    }
  };
  const lookup = (path: string, key = acme.keys.reader) => app.inject({ url: `/api/v1/${path}`, headers: { authorization: key } });

  for (const kind of ['domain', 'url'] as const) {
    const value = kind === 'domain' ? `blocked-${tag}.unreported.example` : `http://unreported-${tag}.example/blocked`;
    const path = `${kind}s/${encodeURIComponent(value)}`;
    const field = kind;
    const scoreList = (t: number, key?: string) => list(`${kind}s/score/${t}${kind === 'domain' ? '?protocol=HTTP' : ''}`, key);
    const mine = (lines: string[]) => lines.filter((l) => l.includes(tag)).map((l) => l.replace(/^http:\/\/(?!unreported)/, ''));

    it(`${kind}: a blacklist is listed at every threshold, fed as a record of score 0 and looked up, for the deciding organization only; a clear delivers it again with decision null`, async () => {
      await put(path, 1);
      for (const t of [2, 500, 999]) {
        expect(mine(await scoreList(t)), `${kind}s/score/${t}`).toEqual([value]);
        expect(mine(await scoreList(t, other.keys.reader))).toEqual([]);
      }
      const found = await lookup(path);
      expect(found.statusCode, found.body).toBe(200);
      expect(found.json()).toMatchObject({ [field]: value, score: 0, decision: 1, total_reports: 0, total_members: 0 });
      expect((await lookup(path, other.keys.reader)).statusCode).toBe(404);

      await settled();
      const first = (await feed(`${kind}s`)).filter((r) => r[field] === value);
      expect(first).toHaveLength(1);
      expect(first[0]).toMatchObject({ score: 0, decision: 1 });
      expect((await feed(`${kind}s`, other.keys.reader)).filter((r) => r[field] === value)).toEqual([]);

      // The clear: listed nowhere, and delivered once more (a later ts) with decision null.
      await settled();
      await put(path, -1);
      await settled();
      expect(mine(await scoreList(2))).toEqual([]);
      // The look-up shows the record the feed holds (a TAXII consumer got it, revoked, and must find it).
      expect((await lookup(path)).json()).toMatchObject({ [field]: value, score: 0, decision: null });
      const cleared = (await feed(`${kind}s`)).filter((r) => r[field] === value);
      expect(cleared).toHaveLength(1);
      expect(cleared[0]).toMatchObject({ score: 0, decision: null });
      expect(cleared[0]!.ts).toBeGreaterThan(first[0]!.ts);
      // A cursor past the blacklist's record gets the clear.
      const since = (await app.inject({ url: `/api/v1/${kind}s?ts=${first[0]!.ts}&page_size=1000`, headers: { authorization: acme.keys.reader } })).json() as { body: Array<Record<string, unknown>> };
      expect(since.body.filter((r) => r[field] === value)).toMatchObject([{ decision: null }]);

      // A whitelist is a record (decision 0) but never listed; the look-up shows it.
      await put(path, 0);
      expect(mine(await scoreList(2))).toEqual([]);
      expect((await lookup(path)).json()).toMatchObject({ [field]: value, score: 0, decision: 0 });
    });

    it(`${kind}: a first report of a blacklisted value becomes its record: listed once, fed with its score and the decision`, async () => {
      const reported = kind === 'domain' ? `later-${tag}.unreported.example` : `http://unreported-${tag}.example/later`;
      const reportedPath = `${kind}s/${encodeURIComponent(reported)}`;
      await put(reportedPath, 1);
      await settled();
      const before = (await feed(`${kind}s`)).filter((r) => r[field] === reported);
      expect(before).toMatchObject([{ score: 0, decision: 1 }]);
      const res = await app.inject({ method: 'POST', url: `/api/v1/${kind}s`, headers: { authorization: other.keys.contributor }, payload: { [field]: reported, confidence: 0.2 } });
      expect(res.statusCode, res.body).toBe(200);
      await settled();
      expect(mine(await scoreList(999)).filter((l) => l === reported)).toEqual([reported]);
      const after = (await feed(`${kind}s`)).filter((r) => r[field] === reported);
      expect(after).toHaveLength(1);
      expect(after[0]!.score).toBeGreaterThan(0);
      expect(after[0]).toMatchObject({ decision: 1 });
      expect(after[0]!.ts).toBeGreaterThan(before[0]!.ts);
      // The other organization sees the reported value, without acme's decision.
      expect((await lookup(reportedPath, other.keys.reader)).json()).toMatchObject({ [field]: reported, decision: null });
    });
  }

  it('file: a blacklist on a digest nobody reported is listed under its digest kind only, fed and looked up; a report that carries it makes it the file', async () => {
    const md5 = randomBytes(16).toString('hex').toUpperCase();
    const sha256 = randomBytes(32).toString('hex').toUpperCase();
    const mineOf = (lines: string[]) => lines.filter((l) => l === md5 || l === sha256);
    await put(`files/${md5.toLowerCase()}`, 1);
    for (const t of [2, 500, 999]) {
      expect(mineOf(await list(`files/score/${t}?digest=MD5`)), `files/score/${t}`).toEqual([md5]);
      expect(mineOf(await list(`files/score/${t}?digest=SHA256`))).toEqual([]);
      expect(mineOf(await list(`files/score/${t}?digest=MD5`, other.keys.reader))).toEqual([]);
    }
    const found = await lookup(`files/${md5}`);
    expect(found.statusCode, found.body).toBe(200);
    expect(found.json()).toMatchObject({ md5, sha1: '', sha256: '', file_type: '', score: 0, decision: 1 });
    expect((await lookup(`files/${md5}`, other.keys.reader)).statusCode).toBe(404);
    await settled();
    const first = (await feed('files')).filter((r) => r.md5 === md5);
    expect(first).toMatchObject([{ sha256: '', score: 0, decision: 1 }]);
    // A page narrowed by type carries no decision record (it has no type).
    const typed = (await app.inject({ url: '/api/v1/files?ts=0&page_size=1000&file_type=application/pdf', headers: { authorization: acme.keys.reader } })).json() as { body: Array<{ md5: string }> };
    expect(typed.body.filter((r) => r.md5 === md5)).toEqual([]);

    // Another organization reports the file with both digests: acme's blacklist now governs that file.
    const res = await app.inject({ method: 'POST', url: '/api/v1/files', headers: { authorization: other.keys.contributor }, payload: { md5, sha256, confidence: 0.2, file_type: 'application/pdf' } });
    expect(res.statusCode, res.body).toBe(200);
    await settled();
    expect(mineOf(await list('files/score/999?digest=MD5'))).toEqual([md5]);
    expect(mineOf(await list('files/score/999?digest=SHA256'))).toEqual([sha256]);
    const held = (await feed('files')).filter((r) => r.md5 === md5);
    expect(held).toMatchObject([{ sha256, file_type: 'application/pdf', decision: 1 }]);
    expect(held[0]!.ts).toBeGreaterThan(first[0]!.ts);

    // A clear on a second digest nobody reported is delivered with decision null and listed nowhere.
    const sha1 = randomBytes(20).toString('hex').toUpperCase();
    await put(`files/${sha1}`, 1);
    expect((await list('files/score/2?digest=SHA1')).filter((l) => l === sha1)).toEqual([sha1]);
    await settled();
    await put(`files/${sha1}`, -1);
    await settled();
    expect((await list('files/score/2?digest=SHA1')).filter((l) => l === sha1)).toEqual([]);
    expect((await feed('files')).filter((r) => r.sha1 === sha1)).toMatchObject([{ md5: '', sha256: '', score: 0, decision: null }]);
    expect((await lookup(`files/${sha1}`)).json()).toMatchObject({ sha1, score: 0, decision: null });
  });
});
