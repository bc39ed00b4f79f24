import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaxiiCollections, TaxiiEnvelope, TaxiiError, TaxiiManifest, TaxiiVersions } from '@rampart/contracts';
import { liveScore } from '@rampart/scoring';
import { TAXII_COLLECTIONS } from '../src/services/stix/taxii.ts';
import { ALLIANCE_IDENTITY, confidenceOf } from '../src/services/stix/stix21.ts';
import type { Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sharedGate } from '@rampart/plugin-kit/testing';
import { ORACLE21_DIR, parsePattern, stix21Validator } from './support/stix21-oracle.ts';
import { TAXII_21, TaxiiClient } from './support/taxii-client.ts';

const oracle21Available =
  !sharedGate('TAXII 2.1 oracle checks', 'oracles/stix2.1/schemas/common/bundle.json') && !sharedGate('TAXII 2.1 pattern grammar', 'oracles/stix2.1/pattern_grammar/STIXPattern.g4');

const MD5 = '44D88612FEA8A8F36DE82E1278ABB02F';
const SHA256 = '275A021BBFB6489E54D471899F7DB9D1663FC695EC2FE2A2C4538AABF651FD0F';
const IDS = Object.fromEntries(TAXII_COLLECTIONS.map((c) => [c.kind, c.collection.id])) as Record<'ipv4' | 'domain' | 'url' | 'file', string>;
const ROOT = '/taxii2/alliance/';
const coll = (kind: keyof typeof IDS) => `${ROOT}collections/${IDS[kind]}/`;
const basic = (key: string, user = 'soc') => `Basic ${Buffer.from(`${user}:${key}`).toString('base64')}`;

type StixObject = Record<string, unknown> & { id: string; type: string };

describe.skipIf(!oracle21Available)('the STIX 2.1 oracle and its pattern parser', () => {
  const validate = oracle21Available ? stix21Validator() : () => [];

  it('validates the OASIS example and rejects it without valid_from (the validator can fail)', () => {
    const example = JSON.parse(readFileSync(join(ORACLE21_DIR, 'examples', 'indicator-for-c2-ip-address.json'), 'utf8'));
    expect(validate(example)).toEqual([]);
    expect(validate(example.objects[0])).toEqual([]);
    const broken = structuredClone(example.objects[0]);
    delete broken.valid_from;
    expect(validate(broken)).not.toEqual([]);
    expect(validate({ ...example.objects[0], id: 'indicator--x' })).not.toEqual([]);
  });

  it('parses the grammar: precedence, qualifiers, literals; rejects what it does not derive', () => {
    expect(parsePattern("[ipv4-addr:value = '10.0.0.0/8']")).toEqual([{ objectType: 'ipv4-addr', path: ['value'], negated: false, operator: '=', values: [{ type: 'StringLiteral', value: '10.0.0.0/8' }] }]);
    expect(parsePattern("[file:hashes.MD5 = 'ab' OR file:hashes.'SHA-256' = 'cd'] FOLLOWEDBY ([a:b[*].c NOT IN (1, -2, 'x')] AND [x:y > t'2020-01-01T00:00:00Z']) WITHIN 5 SECONDS REPEATS 2 TIMES").map((t) => [t.objectType, t.path, t.operator, t.negated])).toEqual([
      ['file', ['hashes', 'MD5'], '=', false],
      ['file', ['hashes', 'SHA-256'], '=', false],
      ['a', ['b', '[*]', 'c'], 'IN', true],
      ['x', ['y'], '>', false],
    ]);
    expect(parsePattern("[url:value = 'it\\'s \\\\ here']")[0]!.values[0]!.value).toBe("it's \\ here");
    for (const bad of ["[ipv4-addr:value = '1.2.3.4'", "ipv4-addr:value = '1.2.3.4'", "[file:hashes.SHA-256 = 'ab']", "[url:value = 'it's']", "[domain-name:value === 'x']", "[a:b = 1] AND", "[a:b LIKE 1]", "[a-b:c-d = 1]"]) {
      expect(() => parsePattern(bad), bad).toThrow(/^pattern: /);
    }
    // Every pattern of the OASIS examples parses.
    for (const file of ['indicator-for-c2-ip-address.json', 'indicators-for-C2-with-COA.json', 'malicious-email-indicator-with-attachment.json']) {
      const bundle = JSON.parse(readFileSync(join(ORACLE21_DIR, 'examples', file), 'utf8')) as { objects: StixObject[] };
      for (const o of bundle.objects.filter((x) => x.type === 'indicator')) expect(parsePattern(o.pattern as string).length, file).toBeGreaterThan(0);
    }
  });
});

describe.each(oracle21Available ? driverCases() : [])('TAXII 2.1 at /taxii2/ on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let beta: TestOrg;
  const validate = oracle21Available ? stix21Validator() : () => [];
  /** Every object the server sent in this suite, checked after each test. */
  const emitted: StixObject[] = [];

  const dbSecond = async () => Number((await sqlOf(store).query<{ s: number }>('select floor(extract(epoch from clock_timestamp()))::bigint as s')).rows[0]!.s);
  /** Until the feeds have settled every second written so far. */
  async function settle(): Promise<void> {
    const last = await dbSecond();
    const deadline = Date.now() + 10_000;
    while ((await dbSecond()) <= last) {
      if (Date.now() > deadline) throw new Error('the database clock did not move');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const report = async (org: TestOrg, kind: string, payload: object) => {
    const res = await app.inject({ method: 'POST', url: `/api/v1/${kind}`, headers: { authorization: org.keys.contributor }, payload });
    expect(res.statusCode, res.body).toBeLessThan(300);
  };
  const decide = async (org: TestOrg, path: string, decision: number) => {
    const res = await app.inject({ method: 'PUT', url: `/api/v1/${path}`, headers: { authorization: org.keys.contributor }, payload: { decision } });
    expect(res.statusCode, res.body).toBe(200);
  };
  const taxii = (key: string, url: string, headers: Record<string, string> = {}) => app.inject({ url, headers: { authorization: key, accept: TAXII_21, ...headers } });
  const client = (org: TestOrg) => new TaxiiClient(app, org.keys.reader);

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store, { rateLimitPerMinute: 1_000_000 });
    acme = await seedOrg(store, { trust: 0.8, credits: 1_000_000 });
    beta = await seedOrg(store, { trust: 0.6, credits: 1_000_000 });
    await report(acme, 'domains', { domain: 'evil.example', confidence: 0.9, tags: ['phishing'] });
    await report(acme, 'urls', { url: "http://evil.example/it's/login?next=a|b", confidence: 0.8 });
    await report(acme, 'files', { md5: MD5, sha256: SHA256, file_type: 'application/zip', file_name: 'eicar.zip', confidence: 1 });
    await report(acme, 'ips', { ip: '45.33.32.156', confidence: 0.9, source: 'ssh' });
    await report(acme, 'ips', { ip: '45.33.40.0/24', confidence: 0.7, source: 'waf' });
    // An indicator reported long ago: it has decayed away for everyone.
    await sqlOf(store).query(`insert into domain_indicators (value, score, ts, entry_ts, members, events) values ('old.example', 300, 1700000600, 1700000000, 1, 2)`);
    await settle();
  }, 300_000);
  afterAll(async () => {
    await app?.close();
    await store?.close();
  });

  /** Schemas, grammar and the rules the schemas cannot check, for every object sent so far. */
  function checkEmitted(objects: StixObject[]) {
    for (const o of objects) {
      emitted.push(o);
      expect(validate(o), JSON.stringify(o)).toEqual([]);
      expect(o.spec_version).toBe('2.1');
      expect(Date.parse(o.modified as string)).toBeGreaterThanOrEqual(Date.parse(o.created as string));
      if (o.type !== 'indicator') continue;
      expect(o.created_by_ref).toBe(ALLIANCE_IDENTITY.id);
      const tests = parsePattern(o.pattern as string);
      expect(tests.length).toBeGreaterThan(0);
      if (o.valid_until !== undefined) expect(Date.parse(o.valid_until as string)).toBeGreaterThan(Date.parse(o.valid_from as string));
      expect(o.confidence).toBeGreaterThanOrEqual(0);
      expect(o.confidence).toBeLessThanOrEqual(100);
      expect(o.pattern_type).toBe('stix');
    }
  }

  it('walks discovery → API root → collections, one read-only collection per kind', async () => {
    const c = client(acme);
    const { root, collections } = await c.collections();
    expect(root).toBe(ROOT);
    expect(TaxiiCollections.parse({ collections }).collections!.map((x) => [x.id, x.title, x.alias, x.can_read, x.can_write])).toEqual([
      [IDS.ipv4, 'IPv4 addresses and networks', 'ipv4', true, false],
      [IDS.domain, 'Domains', 'domains', true, false],
      [IDS.url, 'URLs', 'urls', true, false],
      [IDS.file, 'File digests', 'files', true, false],
    ]);
    const one = await c.get(coll('url'));
    expect(one.body).toMatchObject({ id: IDS.url, media_types: ['application/stix+json;version=2.1'] });
    // Discovery and collections are free.
    expect((await taxii(acme.keys.reader, '/taxii2/')).headers['x-coins-cost']).toBeUndefined();
  });

  it('serves STIX 2.1 indicators that pass the OASIS schemas and grammar, with the patterns of each kind', async () => {
    const patterns: string[] = [];
    for (const kind of ['ipv4', 'domain', 'url', 'file'] as const) {
      const objects = await client(acme).poll(coll(kind), 1000);
      checkEmitted(objects as StixObject[]);
      patterns.push(...objects.filter((o) => o.type === 'indicator').map((o) => o.pattern as string));
      expect(objects.filter((o) => o.type === 'identity')).toEqual([ALLIANCE_IDENTITY]);
    }
    expect(patterns.sort()).toEqual(
      [
        "[ipv4-addr:value = '45.33.32.156']",
        "[ipv4-addr:value = '45.33.40.0/24']",
        "[domain-name:value = 'evil.example']",
        "[domain-name:value = 'old.example']",
        "[url:value = 'http://evil.example/it\\'s/login?next=a|b']",
        `[file:hashes.MD5 = '${MD5}' OR file:hashes.'SHA-256' = '${SHA256}']`,
      ].sort(),
    );
    const [domain] = (await client(acme).poll(coll('domain'), 1000, '&match[type]=indicator')).filter((o) => o.name === 'Domain evil.example');
    const lookup = (await app.inject({ url: '/api/v1/domains/evil.example', headers: { authorization: acme.keys.reader } })).json();
    expect(domain).toMatchObject({
      indicator_types: ['malicious-activity'],
      labels: ['phishing'],
      modified: new Date(lookup.ts * 1000).toISOString(),
      valid_from: new Date(lookup.ts * 1000).toISOString(),
      confidence: confidenceOf(lookup.score),
      external_references: [{ source_name: 'rampart', external_id: 'evil.example', url: expect.stringMatching(/^https?:\/\/[^/]+\/api\/v1\/domains\/evil\.example$/) }],
    });
    expect(domain!.revoked).toBeUndefined();
    expect(Date.parse(domain!.valid_until as string)).toBeGreaterThan(Date.now());
  });

  it('gives an indicator that decayed away a revoked version at the second its validity ended', async () => {
    const objects = await client(acme).poll(coll('domain'), 1000, '&match[version]=all');
    const old = objects.filter((o) => o.name === 'Domain old.example');
    expect(old.map((o) => [o.modified, o.revoked ?? false])).toEqual([
      ['2023-11-14T22:23:20.000Z', false],
      [old[1]!.valid_until, true],
    ]);
    expect(old[0]!.valid_until).toBe(old[1]!.valid_until);
    const end = Date.parse(old[1]!.modified as string) / 1000;
    expect(liveScore(300, end - 1 - 1700000600)).toBeGreaterThanOrEqual(1);
    expect(liveScore(300, end - 1700000600)).toBeLessThan(1);
    checkEmitted(old as StixObject[]);
    const id = old[0]!.id;
    const versions = TaxiiVersions.parse((await taxii(acme.keys.reader, `${coll('domain')}objects/${id}/versions/`)).json());
    expect(versions).toEqual({ more: false, versions: [old[0]!.modified, old[1]!.modified] });
    const newest = TaxiiEnvelope.parse((await taxii(acme.keys.reader, `${coll('domain')}objects/${id}/`)).json());
    expect(newest.objects).toEqual([old[1]]);
  });

  it('walks with paging and added_after and sees every change exactly once, in added order', async () => {
    const c = client(beta);
    await c.collections();
    const first = await c.poll(coll('domain'), 2);
    expect(new Set(first.map((o) => o.id)).size).toBe(first.length);
    for (let i = 0; i < 5; i++) await report(beta, 'domains', { domain: `walk${i}.example`, confidence: 0.5 });
    await settle();
    const second = await c.poll(coll('domain'), 2);
    expect(second.map((o) => String(o.name)).sort((a, b) => a.localeCompare(b))).toEqual(['Domain walk0.example', 'Domain walk1.example', 'Domain walk2.example', 'Domain walk3.example', 'Domain walk4.example']);
    // A score change (another organization reports), a whitelist by the caller's organization, a new indicator.
    await report(acme, 'domains', { domain: 'walk1.example', confidence: 1 });
    await decide(beta, 'domains/walk3.example', 0);
    await report(acme, 'domains', { domain: 'walk9.example', confidence: 1 });
    await settle();
    const third = await c.poll(coll('domain'), 2);
    expect(third.map((o) => String(o.name)).sort((a, b) => a.localeCompare(b))).toEqual(['Domain walk1.example', 'Domain walk3.example', 'Domain walk9.example']);
    const walk3 = [...second, ...third].filter((o) => o.name === 'Domain walk3.example');
    expect(walk3.map((o) => [o.revoked ?? false, o.indicator_types])).toEqual([
      [false, ['malicious-activity']],
      [true, ['benign']],
    ]);
    const walk1 = [...second, ...third].filter((o) => o.name === 'Domain walk1.example');
    expect(walk1[1]!.id).toBe(walk1[0]!.id);
    expect(Date.parse(walk1[1]!.modified as string)).toBeGreaterThan(Date.parse(walk1[0]!.modified as string));
    // Added order: by version (date_added is each version's modified here).
    const added = c.received.map((r) => Date.parse(r.object.modified as string));
    expect(added).toEqual([...added].sort((a, b) => a - b));
    // Nothing new: an empty, free page.
    expect(await c.poll(coll('domain'), 2)).toEqual([]);
    const empty = await taxii(beta.keys.reader, `${coll('domain')}objects/?added_after=${encodeURIComponent(c.addedAfter!)}`);
    expect(empty.json()).toEqual({ more: false });
    expect(empty.headers['x-coins-cost']).toBe('0');
    checkEmitted([...second, ...third] as StixObject[]);
    // The other organization did not whitelist walk3.
    const acmeView = (await client(acme).poll(coll('domain'), 1000)).find((o) => o.name === 'Domain walk3.example');
    expect(acmeView!.revoked).toBeUndefined();
  });

  it('authenticates with the API key, Bearer, or HTTP Basic with the key as password', async () => {
    for (const authorization of [acme.keys.reader, `Bearer ${acme.keys.reader}`, basic(acme.keys.reader), basic(acme.keys.reader, '')]) {
      expect((await taxii(authorization, `${ROOT}collections/`)).statusCode, authorization.slice(0, 6)).toBe(200);
    }
    for (const authorization of [basic('rmp_000000000000_' + 'A'.repeat(43)), '']) {
      const res = await taxii(authorization, `${ROOT}collections/`);
      expect(res.statusCode).toBe(401);
      expect(res.headers['content-type']).toBe(TAXII_21);
      expect(res.headers['www-authenticate']).toBe('Basic realm="Rampart TAXII", charset="UTF-8"');
      expect(TaxiiError.parse(res.json())).toMatchObject({ title: 'Unauthorized', http_status: '401', error_code: 'unauthorized' });
    }
  });

  it('answers 406 to another Accept and TAXII error messages for bad requests', async () => {
    for (const accept of ['application/json', 'application/taxii+json;version=2.0', 'text/html']) {
      const res = await taxii(acme.keys.reader, `${ROOT}collections/`, { accept });
      expect(res.statusCode, accept).toBe(406);
      expect(TaxiiError.parse(res.json())).toMatchObject({ http_status: '406', error_code: 'not_acceptable' });
    }
    for (const accept of ['application/taxii+json', '*/*', 'application/taxii+json;version=2.1, application/json;q=0.5']) {
      expect((await taxii(acme.keys.reader, `${ROOT}collections/`, { accept })).statusCode, accept).toBe(200);
    }
    const cases: Array<[string, number, string]> = [
      [`/taxii2/nowhere/`, 404, 'not_found'],
      [`${ROOT}collections/00000000-0000-4000-8000-000000000000/objects/`, 404, 'not_found'],
      [`${coll('domain')}objects/?added_after=yesterday`, 400, 'validation_failed'],
      [`${coll('domain')}objects/?limit=0`, 400, 'validation_failed'],
      [`${coll('domain')}objects/?next=abc.def`, 400, 'validation_failed'],
      [`${coll('domain')}objects/indicator--00000000-0000-4000-8000-000000000001/`, 404, 'not_found'],
      [`${ROOT}collections/${IDS.domain}/status/1/`, 404, 'route_not_found'],
    ];
    for (const [url, status, code] of cases) {
      const res = await taxii(acme.keys.reader, url);
      expect(res.statusCode, url).toBe(status);
      expect(res.headers['content-type']).toBe(TAXII_21);
      expect(TaxiiError.parse(res.json()), url).toMatchObject({ http_status: String(status), error_code: code });
      if (res.headers['x-coins-cost'] !== undefined) expect(res.headers['x-coins-cost']).toBe('0');
    }
    const bad = (await taxii(acme.keys.reader, `${coll('domain')}objects/?added_after=yesterday`)).json();
    expect(bad.details.errors).toEqual([{ path: 'querystring.added_after', message: expect.any(String) }]);
    // A next value given for one collection is refused by another (signed and bound to its filters).
    const page = (await taxii(acme.keys.reader, `${coll('domain')}objects/?limit=1`)).json();
    expect(page.more).toBe(true);
    expect((await taxii(acme.keys.reader, `${coll('url')}objects/?next=${encodeURIComponent(page.next)}`)).statusCode).toBe(400);
    expect((await taxii(acme.keys.reader, `${coll('domain')}objects/?limit=1&next=${encodeURIComponent(page.next.slice(0, -2) + 'xx')}`)).statusCode).toBe(400);
  });

  it('filters by match[id|type|version|spec_version], and serves the manifest, one object and its versions', async () => {
    const all = (await client(acme).poll(coll('domain'), 1000)) as StixObject[];
    const evil = all.find((o) => o.name === 'Domain evil.example')!;
    const byId = TaxiiEnvelope.parse((await taxii(acme.keys.reader, `${coll('domain')}objects/?match[id]=${evil.id},${ALLIANCE_IDENTITY.id}`)).json());
    expect(byId.objects!.map((o) => o.id)).toEqual([ALLIANCE_IDENTITY.id, evil.id]);
    const identities = TaxiiEnvelope.parse((await taxii(acme.keys.reader, `${coll('domain')}objects/?match[type]=identity`)).json());
    expect(identities.objects).toEqual([ALLIANCE_IDENTITY]);
    expect((await taxii(acme.keys.reader, `${coll('domain')}objects/?match[spec_version]=2.0`)).json()).toEqual({ more: false });
    const atVersion = TaxiiEnvelope.parse((await taxii(acme.keys.reader, `${coll('domain')}objects/?match[id]=${evil.id}&match[version]=${String(evil.modified)}`)).json());
    expect(atVersion.objects).toEqual([evil]);
    expect((await taxii(acme.keys.reader, `${coll('domain')}objects/?match[id]=${evil.id}&match[version]=2001-01-01T00:00:00.000Z`)).json()).toEqual({ more: false });
    // An id of another collection names nothing here.
    expect((await taxii(acme.keys.reader, `${coll('url')}objects/?match[id]=${evil.id}`)).json()).toEqual({ more: false });
    const manifest = await taxii(acme.keys.reader, `${coll('domain')}manifest/?match[id]=${evil.id}`);
    expect(TaxiiManifest.parse(manifest.json())).toEqual({ more: false, objects: [{ id: evil.id, date_added: evil.modified, version: evil.modified, media_type: 'application/stix+json;version=2.1' }] });
    expect(manifest.headers['x-taxii-date-added-first']).toBe(evil.modified);
    expect(manifest.headers['x-taxii-date-added-last']).toBe(evil.modified);
    const one = await taxii(acme.keys.reader, `${coll('domain')}objects/${evil.id}/`);
    expect(TaxiiEnvelope.parse(one.json())).toEqual({ more: false, objects: [evil] });
    expect(one.headers['x-coins-cost']).toBe('1');
    expect(TaxiiVersions.parse((await taxii(acme.keys.reader, `${coll('domain')}objects/${evil.id}/versions/`)).json())).toEqual({ more: false, versions: [evil.modified] });
    // The manifest pages like the objects.
    const m1 = TaxiiManifest.parse((await taxii(acme.keys.reader, `${coll('domain')}manifest/?limit=2`)).json());
    expect(m1.objects).toHaveLength(2);
    expect(m1.more).toBe(true);
  });

  it('charges a page as a feed page: an empty page is free, a page with objects is 402 without coins', async () => {
    const page = await taxii(acme.keys.reader, `${coll('domain')}objects/?limit=1`);
    expect(page.json().objects, page.body).toHaveLength(1);
    expect(page.headers['x-coins-cost']).toBe('1');
    const poor = await seedOrg(store, { credits: 0 });
    const paid = await taxii(poor.keys.reader, `${coll('domain')}objects/`);
    expect(paid.statusCode).toBe(402);
    expect(TaxiiError.parse(paid.json())).toMatchObject({ http_status: '402', error_code: 'insufficient_coins', details: { balance: 0, price: 1 } });
    const empty = await taxii(poor.keys.reader, `${coll('domain')}objects/?added_after=2100-01-01T00:00:00Z`);
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({ more: false });
    expect(empty.headers['x-coins-cost']).toBe('0');
  });

  it("applies the organization's delay and reserved ranges", async () => {
    const late = await seedOrg(store, { credits: 10_000 });
    await sqlOf(store).query(`update organizations set delay = '86400' where id = $1`, [late.org.id]);
    const seen = (await new TaxiiClient(app, late.keys.reader).poll(coll('domain'), 1000)).map((o) => o.name);
    // Only what is older than a day: the indicator of 2023 (and the identity).
    expect(seen).toEqual(['Domain old.example', 'Rampart alliance']);
    const admin = await app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: beta.keys.admin }, payload: { reserved_ips: ['45.33.32.0/24'] } });
    expect(admin.statusCode, admin.body).toBe(200);
    await settle();
    const ips = (await new TaxiiClient(app, beta.keys.reader).poll(coll('ipv4'), 1000)).filter((o) => o.type === 'indicator');
    const reserved = ips.find((o) => o.pattern === "[ipv4-addr:value = '45.33.32.156']");
    expect(reserved).toMatchObject({ revoked: true, indicator_types: ['benign'] });
    checkEmitted(ips as StixObject[]);
  });

  it("ends an IPv4 blacklist's validity at its ttl, when that is later than the decay", async () => {
    const ttl = (await dbSecond()) + 10 ** 8;
    const res = await app.inject({ method: 'PUT', url: `/api/v1/ips/${encodeURIComponent('45.33.40.0/24')}`, headers: { authorization: acme.keys.contributor }, payload: { decision: 1, ttl } });
    expect(res.statusCode, res.body).toBe(200);
    await settle();
    const objects = (await client(acme).poll(coll('ipv4'), 1000, '&match[type]=indicator')) as StixObject[];
    checkEmitted(objects);
    const network = objects.find((o) => o.pattern === "[ipv4-addr:value = '45.33.40.0/24']");
    expect(network).toMatchObject({ valid_until: new Date(ttl * 1000).toISOString(), indicator_types: ['malicious-activity'], name: 'IPv4 network 45.33.40.0/24' });
    expect(network!.revoked).toBeUndefined();
    // Another organization's view is not touched: its validity ends with the decay.
    const other = ((await client(beta).poll(coll('ipv4'), 1000, '&match[type]=indicator')) as StixObject[]).find((o) => o.pattern === network!.pattern);
    expect(Date.parse(other!.valid_until as string)).toBeLessThan(ttl * 1000);
  });

  it('answers STIX 2.1 bundles on /stix2 with spec_version=2.1, 2.0 by default', async () => {
    for (const id of ['evil.example', '45.33.32.156', MD5, encodeURIComponent("http://evil.example/it's/login?next=a|b")]) {
      const res = await app.inject({ url: `/api/v1/stix2/${id}?spec_version=2.1`, headers: { authorization: acme.keys.reader } });
      expect(res.statusCode, res.body).toBe(200);
      const bundle = res.json() as { type: string; objects: StixObject[] };
      expect(validate(bundle)).toEqual([]);
      expect(bundle.objects.map((o) => o.type)).toEqual(['identity', 'indicator']);
      checkEmitted(bundle.objects);
      // The same object, newest version, as the collection serves it.
      const kind = id === 'evil.example' ? 'domain' : id === MD5 ? 'file' : id.startsWith('45') ? 'ipv4' : 'url';
      const one = (await taxii(acme.keys.reader, `${coll(kind)}objects/${bundle.objects[1]!.id}/`)).json();
      expect(one.objects).toEqual([bundle.objects[1]]);
    }
    const legacy = (await app.inject({ url: '/api/v1/stix2/evil.example', headers: { authorization: acme.keys.reader } })).json();
    expect(legacy.spec_version).toBe('2.0');
    expect((await app.inject({ url: '/api/v1/stix2/evil.example?spec_version=3', headers: { authorization: acme.keys.reader } })).statusCode).toBe(400);
  });

  it('the newest version of each object agrees with the look-up for each organization', async () => {
    let compared = 0;
    for (const org of [acme, beta]) {
      const now = (await dbSecond()) - 1;
      for (const kind of ['domain', 'url'] as const) {
        const c = new TaxiiClient(app, org.keys.reader);
        await c.poll(coll(kind), 3);
        for (const object of c.newest.values()) {
          if (object.type !== 'indicator') continue;
          const value = (object.external_references as Array<{ external_id: string }>)[0]!.external_id;
          const res = await app.inject({ url: `/api/v1/${kind}s/${encodeURIComponent(value)}`, headers: { authorization: org.keys.reader } });
          expect(res.statusCode, value).toBe(200);
          const record = res.json() as { ts: number; score: number; decision: number | null };
          const whitelisted = record.decision === 0;
          const blacklisted = record.decision === 1;
          const decayed = !blacklisted && liveScore(record.score, now - record.ts) < 1;
          expect(object.revoked ?? false, value).toBe(whitelisted || decayed);
          expect(object.valid_from, value).toBe(new Date(record.ts * 1000).toISOString());
          if (!decayed) {
            expect(object.modified, value).toBe(new Date(record.ts * 1000).toISOString());
            expect(object.confidence, value).toBe(confidenceOf(record.score));
          } else expect(liveScore(record.score, Date.parse(object.modified as string) / 1000 - record.ts)).toBeLessThan(1);
          expect(object.indicator_types, value).toEqual([whitelisted ? 'benign' : 'malicious-activity']);
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(15);
  });

  it('serves by id the record of a decision on a value nobody reported, to its organization only', async () => {
    const digest = 'ab'.repeat(32).toUpperCase();
    await decide(acme, 'domains/unreported-taxii.example', 1);
    await decide(acme, `files/${digest}`, 1);
    await settle();
    for (const [kind, name] of [
      ['domain', 'Domain unreported-taxii.example'],
      ['file', `File ${digest}`],
    ] as const) {
      const polled = (await client(acme).poll(coll(kind), 1000)) as StixObject[];
      const record = polled.find((o) => o.name === name);
      expect(record, `${kind}: ${polled.map((o) => o.name).join(', ')}`).toBeDefined();
      checkEmitted([record!]);
      const one = await taxii(acme.keys.reader, `${coll(kind)}objects/${record!.id}/`);
      expect(one.statusCode, one.body).toBe(200);
      expect(TaxiiEnvelope.parse(one.json()).objects).toEqual([record]);
      const versions = await taxii(acme.keys.reader, `${coll(kind)}objects/${record!.id}/versions/`);
      expect(TaxiiVersions.parse(versions.json())).toEqual({ more: false, versions: [record!.modified] });
      const byId = TaxiiEnvelope.parse((await taxii(acme.keys.reader, `${coll(kind)}objects/?match[id]=${record!.id}`)).json());
      expect(byId.objects).toEqual([record]);
      // Another organization holds no such object.
      expect((await taxii(beta.keys.reader, `${coll(kind)}objects/${record!.id}/`)).statusCode).toBe(404);
    }
  });

  it('emitted only valid objects', () => {
    expect(emitted.length).toBeGreaterThan(20);
  });
});
