import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrganizationConfig } from '@rampart/contracts';
import { isBlocked, liveScore, scoreV32, lastSecondAtOrAbove, type Decision } from '@rampart/scoring';
import { createEnrichment } from '../src/services/enrichment/enrichment.ts';
import { ipv4ListFilter, reservedRangeOf, type Ipv4Policy } from '../src/services/ipv4/policy.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

const HOUR = 3600;

interface Seed {
  ip: string;
  score: number;
  age: number;
  sources?: string[];
  decision?: { value: Decision; ttl: number | null; network?: string };
}

describe.each(driverCases())('IPv4 decisions, look-ups and lists on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;
  const now = Math.floor(Date.now() / 1000);
  const seeds: Seed[] = [
    { ip: '100.64.0.1', score: 500, age: 0 },
    { ip: '100.64.0.2', score: 50, age: 0 },
    { ip: '100.64.0.3', score: 500, age: 1250 * HOUR },
    { ip: '100.64.0.4', score: 10, age: 0, decision: { value: 1, ttl: now + 86_400 } },
    { ip: '100.64.0.5', score: 900, age: 0, decision: { value: 0, ttl: null } },
    { ip: '100.64.0.6', score: 900, age: 0 },
    { ip: '100.64.1.0/24', score: 600, age: 10 * HOUR },
    { ip: '100.64.0.8', score: 900, age: 0, decision: { value: 1, ttl: now - 10 } },
    { ip: '100.64.0.9', score: 30, age: 0, sources: ['ssh'] },
    { ip: '100.64.0.10', score: 30, age: 0, sources: ['waf'] },
    { ip: '100.64.2.5', score: 900, age: 0, decision: { value: 0, ttl: null, network: '100.64.2.0/24' } },
    { ip: '100.64.0.12', score: 1000, age: 2000 * HOUR },
  ];
  const policy: Ipv4Policy = { orgId: 0, reserved: ['100.64.0.6/31'], ranges: [{ start: 0x64400006, end: 0x64400007 }], rule: { score: 20, tags: ['ssh'] } };

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 100_000 });
    other = await seedOrg(store, { credits: 100_000 });
    await store.settings.replaceOrganization(acme.org.id, () => OrganizationConfig.parse({ reserved_ips: policy.reserved, blocking_roule: policy.rule }), 'test');
    for (const [i, s] of seeds.entries()) {
      const network = s.ip.includes('/') ? s.ip : `${s.ip}/32`;
      await sqlOf(store).query(
        `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events, sources)
         values ($1, $2::cidr, $3, $4, $5, $5, 1, $6, $7)`,
        [`RMP-RULE-GID-SEED${i}`, network, s.ip.includes('/'), s.score, now - s.age, i + 1, s.sources ?? []],
      );
      if (s.decision) {
        await sqlOf(store).query('insert into ipv4_decisions (org_id, network, decision, ttl) values ($1, $2::cidr, $3, $4)', [
          acme.org.id,
          s.decision.network ?? network,
          s.decision.value,
          s.decision.ttl,
        ]);
      }
    }
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const get = (key: string, url: string, headers: Record<string, string> = {}) => app.inject({ url: `/api/v1${url}`, headers: { authorization: key, ...headers } });

  /** What the shared precedence says for one seed, for acme (with policy) or for an organization without any. */
  function expectedBlocked(s: Seed, threshold: number, at: number, withPolicy: boolean): boolean {
    const network = s.ip.includes('/') ? s.ip : `${s.ip}/32`;
    return isBlocked({
      reserved: withPolicy && reservedRangeOf(policy, network) !== null,
      decision: withPolicy ? (s.decision?.value ?? -1) : -1,
      ttl: withPolicy ? (s.decision?.ttl ?? null) : null,
      now: at,
      liveScore: liveScore(s.score, at - (now - s.age)),
      threshold,
      blockingRule: withPolicy ? policy.rule : null,
      tags: s.sources ?? [],
    }).blocked;
  }

  it('/ipv4/{min_score} lists exactly what isBlocked blocks, for the caller\'s organization', async () => {
    for (const threshold of [1, 40, 100, 200, 249, 251, 300, 499, 1000]) {
      for (const [org, withPolicy] of [[acme, true], [other, false]] as const) {
        const before = Math.floor(Date.now() / 1000);
        const res = await get(org.keys.reader, `/ipv4/${threshold}`);
        const after = Math.floor(Date.now() / 1000);
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
        expect(res.headers.next_page).toBeUndefined();
        const options = new Set([before, after].map((at) => seeds.filter((s) => expectedBlocked(s, threshold, at, withPolicy)).map((s) => s.ip).join('\n')));
        const listed = res.body.split('\n').filter(Boolean).join('\n');
        expect(options.has(listed), `threshold ${threshold} ${withPolicy}: ${listed}`).toBe(true);
      }
    }
    // Spot checks that the precedence really is in play.
    const acme100 = (await get(acme.keys.reader, '/ipv4/100')).body.split('\n');
    expect(acme100).toContain('100.64.0.4'); // blacklist beats a low score
    expect(acme100).not.toContain('100.64.0.5'); // whitelist beats a high score
    expect(acme100).not.toContain('100.64.0.6'); // reserved
    expect(acme100).toContain('100.64.0.8'); // expired blacklist: the score decides
    expect(acme100).toContain('100.64.0.9'); // blocking_roule: score 30 >= 20 and source ssh
    expect(acme100).not.toContain('100.64.0.10');
    expect(acme100).not.toContain('100.64.2.5'); // whitelisted through its /24
    expect(acme100).toContain('100.64.1.0/24');
    const other100 = (await get(other.keys.reader, '/ipv4/100')).body.split('\n');
    expect(other100).toContain('100.64.0.5');
    expect(other100).toContain('100.64.0.6');
    expect(other100).not.toContain('100.64.0.4');
  });

  it('/ipv4 accepts min_score 1 and 1000, refuses 0, 1001 and bad query values with 400 naming the field', async () => {
    for (const ok of ['/ipv4/1', '/ipv4/1000', '/ipv4/1?format=LIST', '/ipv4/1?format=CSV']) expect((await get(acme.keys.reader, ok)).statusCode).toBe(200);
    for (const [url, path] of [
      ['/ipv4/0', 'params.min_score'],
      ['/ipv4/1001', 'params.min_score'],
      ['/ipv4/abc', 'params.min_score'],
      ['/ipv4/1?format=JSON', 'querystring.format'],
      ['/ipv4/1?page=', 'querystring.page'],
      [`/ipv4/1?agid=${'x'.repeat(257)}`, 'querystring.agid'],
    ]) {
      const res = await get(acme.keys.reader, url!);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    const forged = await get(acme.keys.reader, '/ipv4/1?page=abc.def');
    expect(forged.statusCode).toBe(400);
    expect(forged.json().detail).toContain('page:');
  });

  it('/ipv4 format=LIST separates the same addresses with commas and records agid/plugin as a check-in', async () => {
    await sqlOf(store).query(`insert into agents (org_id, gaid, document) values ($1, 'RMP-AGENT-ID-LISTS1', '{}'::jsonb)`, [acme.org.id]);
    const lines = (await get(acme.keys.reader, '/ipv4/100')).body.trimEnd().split('\n');
    const list = await get(acme.keys.reader, '/ipv4/100?format=LIST&agid=RMP-AGENT-ID-LISTS1&plugin=nftables');
    expect(list.body).toBe(lines.join(','));
    const agent = await sqlOf(store).query<{ via: string; plugin: string }>(`select last_checkin_via as via, last_plugin as plugin from agents where gaid = 'RMP-AGENT-ID-LISTS1'`);
    expect(agent.rows[0]).toEqual({ via: 'ipv4', plugin: 'nftables' });
  });

  it('answers 304 to If-None-Match until a change, then a new ETag', async () => {
    const first = await get(acme.keys.reader, '/ipv4/100');
    const etag = first.headers.etag as string;
    expect((await get(acme.keys.reader, '/ipv4/100', { 'if-none-match': etag })).statusCode).toBe(304);
    await sqlOf(store).query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ('RMP-RULE-GID-ETAG', '100.64.9.9/32', false, 900, $1, $1)`, [now]);
    const changed = await get(acme.keys.reader, '/ipv4/100', { 'if-none-match': etag });
    expect(changed.statusCode).toBe(200);
    expect(changed.body.split('\n')).toContain('100.64.9.9');
    expect(changed.headers.etag).not.toBe(etag);
    await sqlOf(store).query(`delete from ipv4_indicators where gid = 'RMP-RULE-GID-ETAG'`);
  });

  it('/flat accepts 2 and 999, refuses 1, 1000 and list values other than YES/NO', async () => {
    for (const ok of ['/flat/2', '/flat/999', '/flat/2?list=YES', '/flat/2?list=NO']) expect((await get(acme.keys.reader, ok)).statusCode).toBe(200);
    for (const [url, path] of [
      ['/flat/1', 'params.min_score'],
      ['/flat/1000', 'params.min_score'],
      ['/flat/2?list=yes', 'querystring.list'],
    ]) {
      const res = await get(acme.keys.reader, url!);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().errors.map((e: { path: string }) => e.path)).toContain(path);
    }
  });

  it('/flat writes the spec columns with the live score, counts, AS data and CDN mark', async () => {
    const enrichment = createEnrichment();
    const cdnRecord = enrichment.cdnList().records.find((r) => r.addresses.some((a) => /^\d+\.\d+\.\d+\.\d+\/(2[4-9]|3[0-2])$/.test(a)))!;
    const cdnIp = cdnRecord.addresses.find((a) => /^\d+\.\d+\.\d+\.\d+\/(2[4-9]|3[0-2])$/.test(a))!.split('/')[0]!;
    await sqlOf(store).query(
      `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events, ip_info)
       values ('RMP-RULE-GID-FLAT1', $1::cidr, false, 800, $2, $2, 3, 7, null), ('RMP-RULE-GID-FLAT2', '192.0.2.200/32', false, 700, $2, $2, 2, 4, $3)`,
      [`${cdnIp}/32`, now, JSON.stringify({ as_name: 'Example, "Quoted" AS', asn: 'AS64500' })],
    );
    try {
      const before = Math.floor(Date.now() / 1000);
      const res = await get(other.keys.reader, '/flat/500');
      const after = Math.floor(Date.now() / 1000);
      expect(res.statusCode).toBe(200);
      const lines = res.body.trimEnd().split('\n');
      expect(lines[0]).toBe('IPv4,LiveScore,Members,Reports,LastUpdate,AS,ASN,CDN,Reverse,IS_CDN');
      const cdnLine = lines.find((l) => l.startsWith(`${cdnIp},`))!;
      const asn = enrichment.asnOf(cdnIp);
      const cdnName = enrichment.cdnOf(cdnIp)!;
      const quote = (v: string) => (/[",]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);
      const expectedCdn = (at: number, updated: string) =>
        [cdnIp, liveScore(800, at - now).toFixed(2), '3', '7', updated, quote(asn?.name ?? ''), asn ? `AS${asn.asn}` : '', quote(cdnName), '', 'true'].join(',');
      const updated = cdnLine.split(',')[4]!;
      expect(updated).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z$/);
      expect([expectedCdn(before, updated), expectedCdn(after, updated)]).toContain(cdnLine);
      const googleLine = lines.find((l) => l.startsWith('192.0.2.200,'))!;
      expect(googleLine.split(',').slice(2, 4)).toEqual(['2', '4']);
      expect(googleLine).toContain(',"Example, ""Quoted"" AS",AS64500,');
      expect(googleLine.endsWith(',false')).toBe(true);
      const list = await get(other.keys.reader, '/flat/500?list=YES');
      expect(list.body).toBe(lines.slice(1).map((l) => l.split(',')[0]).join(','));
      expect(list.headers.next_page).toBeUndefined();
    } finally {
      await sqlOf(store).query(`delete from ipv4_indicators where gid like 'RMP-RULE-GID-FLAT%'`);
    }
  });

  it('the /ips feed and GET /ips/{ip} carry the caller\'s decision and ttl under the same precedence', async () => {
    const page = (await get(acme.keys.reader, '/ips?ts=0&page_size=1000')).json();
    const byIp = new Map<string, { decision: number; ttl: number | null }>(page.body.map((r: { ip: string; decision: number; ttl: number | null }) => [r.ip, { decision: r.decision, ttl: r.ttl }]));
    expect(byIp.get('100.64.0.4')).toEqual({ decision: 1, ttl: now + 86_400 });
    expect(byIp.get('100.64.0.5')).toEqual({ decision: 0, ttl: null });
    expect(byIp.get('100.64.0.6')).toEqual({ decision: 0, ttl: null });
    // No decision applies: null, never -1 (existing clients read any non-null value as a decision).
    expect(byIp.get('100.64.0.8')).toEqual({ decision: null, ttl: null });
    // The blocking rule holds until the last second the live score is >= the rule's score; ttl is the second after.
    expect(byIp.get('100.64.0.9')).toEqual({ decision: 1, ttl: now + lastSecondAtOrAbove(30, 20) + 1 });
    expect(liveScore(30, lastSecondAtOrAbove(30, 20))).toBeGreaterThanOrEqual(20);
    expect(liveScore(30, lastSecondAtOrAbove(30, 20) + 1)).toBeLessThan(20);
    expect(byIp.get('100.64.0.10')).toEqual({ decision: null, ttl: null });
    expect(byIp.get('100.64.2.5')).toEqual({ decision: 0, ttl: null });
    expect(byIp.get('100.64.0.1')).toEqual({ decision: null, ttl: null });
    const otherPage = (await get(other.keys.reader, '/ips?ts=0&page_size=1000')).json();
    expect(otherPage.body.every((r: { decision: number | null }) => r.decision === null)).toBe(true);

    for (const ip of ['100.64.0.4', '100.64.0.5', '100.64.0.6', '100.64.0.9']) {
      const res = await get(acme.keys.reader, `/ips/${ip}`);
      expect(res.statusCode).toBe(200);
      const one = res.json();
      expect(one.header).toMatchObject({ type: 'IPv4', version: 2, page_size: 1 });
      expect(one.body).toHaveLength(1);
      expect({ decision: one.body[0].decision, ttl: one.body[0].ttl }).toEqual(byIp.get(ip));
    }
  });

  it('GET /ips accepts page_size 1 and 1000 and ts 0, refuses page_size 0 and 1001, ts -1 and bad full', async () => {
    for (const ok of ['/ips?page_size=1', '/ips?page_size=1000', '/ips?ts=0', '/ips?full=yes', '/ips?full=no']) expect((await get(acme.keys.reader, ok)).statusCode, ok).toBe(200);
    for (const [url, path] of [
      ['/ips?page_size=0', 'querystring.page_size'],
      ['/ips?page_size=1001', 'querystring.page_size'],
      ['/ips?ts=-1', 'querystring.ts'],
      ['/ips?ts=1.5', 'querystring.ts'],
      ['/ips?full=YES', 'querystring.full'],
    ]) {
      const res = await get(acme.keys.reader, url!);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    const one = (await get(acme.keys.reader, '/ips?page_size=1')).json();
    expect(one.body).toHaveLength(1);
    expect(one.header.next_ts).toBe(one.body[0].ts);
  });

  it('GET /ips/{ip} returns held networks containing the address, an empty body when nothing is held, 400 for a non-address', async () => {
    const inNet = (await get(acme.keys.reader, '/ips/100.64.1.77?full=yes')).json();
    expect(inNet.body.map((r: { ip: string }) => r.ip)).toEqual(['100.64.1.0/24']);
    expect(inNet.body[0]).toMatchObject({ is_network: true, score: 600, ts: now - 10 * HOUR, info: { members: 1 } });
    const none = await get(acme.keys.reader, '/ips/1.2.3.4');
    expect(none.statusCode).toBe(200);
    expect(none.json().body).toEqual([]);
    for (const bad of ['1.2.3.256', '1.2.3.0%2F24', 'abc']) expect((await get(acme.keys.reader, `/ips/${bad}`)).statusCode).toBe(400);
    expect((await get(acme.keys.reader, '/ips/1.2.3.4?explain=maybe')).statusCode).toBe(400);
    expect((await get(acme.keys.reader, '/ips/1.2.3.4?full=YES')).statusCode).toBe(400);
  });

  it('explain=yes returns the v3.2 components that made the score', async () => {
    const reporters = [acme, other];
    for (const o of reporters) {
      const res = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: o.keys.contributor }, payload: { ip: '45.76.18.1', confidence: 0.9, source: 'ids' } });
      expect(res.statusCode).toBeLessThan(300);
    }
    const res = (await get(acme.keys.reader, '/ips/45.76.18.1?explain=yes')).json();
    const expected = scoreV32([
      { orgTrust: 0.5, confidence: 0.9, events: 1 },
      { orgTrust: 0.5, confidence: 0.9, events: 1 },
    ]);
    expect(res.body[0].score).toBe(expected.s0);
    expect(res.body[0].explain).toMatchObject({ algorithm: '3.2', ...expected.components, s0: expected.s0, decision_reason: 'below_threshold' });
    const plain = (await get(acme.keys.reader, '/ips/45.76.18.1')).json();
    expect(plain.body[0].explain).toBeUndefined();
  });
});

describe.each(driverCases())('IPv4 list pagination on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let org: TestOrg;
  const total = 10_007;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    org = await seedOrg(store, { credits: 100_000 });
    const now = Math.floor(Date.now() / 1000);
    await sqlOf(store).query(
      `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts)
       select 'RMP-RULE-GID-P' || g, ('10.' || (g / 65536) || '.' || ((g / 256) % 256) || '.' || (g % 256) || '/32')::cidr, false, 900, $1, $1
       from generate_series(1, $2::integer) as g`,
      [now, total],
    );
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ url: `/api/v1${url}`, headers: { authorization: org.keys.reader, ...headers } });

  it('serves 10,000 addresses per page, next_page until the last page, every address once', async () => {
    const first = await get('/ipv4/500');
    expect(first.statusCode).toBe(200);
    const firstLines = first.body.trimEnd().split('\n');
    expect(firstLines).toHaveLength(10_000);
    const page = first.headers.next_page as string;
    expect(page).toBeTruthy();
    const second = await get(`/ipv4/500?page=${encodeURIComponent(page)}`);
    expect(second.statusCode).toBe(200);
    expect(second.headers.next_page).toBeUndefined();
    const all = [...firstLines, ...second.body.trimEnd().split('\n')];
    expect(all).toHaveLength(total);
    expect(new Set(all).size).toBe(total);
    expect(all[0]).toBe('10.0.0.1');
    expect(all.at(-1)).toBe(`10.0.${Math.floor(total / 256)}.${total % 256}`);

    const list = await get(`/ipv4/500?format=LIST&page=${encodeURIComponent(page)}`);
    expect(list.body).toBe(second.body.trimEnd().split('\n').join(','));
    const reused = await get(`/ipv4/600?page=${encodeURIComponent(page)}`);
    expect(reused.statusCode).toBe(400);
    expect(reused.json().detail).toBe('page: the cursor was issued for other filters');

    const etag = second.headers.etag as string;
    const again = await get(`/ipv4/500?page=${encodeURIComponent(page)}`, { 'if-none-match': etag });
    expect(again.statusCode).toBe(304);
  });

  it('computes the same page version from the boundary scan as from a separate count', async () => {
    const filter = ipv4ListFilter({ orgId: org.org.id, reserved: [], ranges: [], rule: null }, 500, Math.floor(Date.now() / 1000), false);
    for (const after of [null, 5, 9_990]) {
      const b = await store.ipv4.listBoundary(filter, after, 10_000);
      expect(b.version).toBe(await store.ipv4.listVersion(filter, after, b.last));
      expect(b.version.split(':')[0]).toBe(String(Math.min(10_000, total - (after ?? 0))));
    }
  });

  it('/flat streams every address in one response', async () => {
    const res = await get('/flat/2?list=YES');
    expect(res.statusCode).toBe(200);
    expect(res.headers.next_page).toBeUndefined();
    expect(res.body.split(',')).toHaveLength(total);
    const csv = await get('/flat/2');
    expect(csv.body.trimEnd().split('\n')).toHaveLength(total + 1);
  });
});
