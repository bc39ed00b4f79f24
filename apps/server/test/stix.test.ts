import { readFileSync } from 'node:fs';
import { sharedGate } from '@rampart/plugin-kit/testing';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stix2Bundle } from '@rampart/contracts';
import { patternString, stableStixId, stixBundle, stixPattern } from '../src/services/stix/stix.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { bundleValidator, checkPattern, ORACLE_DIR } from './support/stix-oracle.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

const oracle = !sharedGate('STIX 2.0 oracle checks', 'oracles/stix2.0/schemas/common/bundle.json');

const MD5 = '44D88612FEA8A8F36DE82E1278ABB02F';
const SHA1 = '3395856CE81F2B7382DEE72602F798B642F14140';
const SHA256 = '275A021BBFB6489E54D471899F7DB9D1663FC695EC2FE2A2C4538AABF651FD0F';

describe.skipIf(!oracle)('STIX 2.0 oracle checks', () => {
  const validate = oracle ? bundleValidator() : () => [];

  it('accepts the oracle example and rejects broken bundles (the validator can fail)', () => {
    const example = JSON.parse(readFileSync(join(ORACLE_DIR, 'examples', 'indicator-for-c2-ip-address.json'), 'utf8'));
    expect(validate(example)).toEqual([]);
    expect(validate({ ...example, spec_version: '2.1' })).not.toEqual([]);
    const noPattern = structuredClone(example);
    delete noPattern.objects[0].pattern;
    expect(validate(noPattern)).not.toEqual([]);
    const badId = structuredClone(example);
    badId.objects[0].id = 'indicator--not-a-uuid';
    expect(validate(badId)).not.toEqual([]);
    expect(checkPattern(example.objects[0].pattern)).toEqual([{ objectType: 'ipv4-addr', path: ['value'], operator: '=', value: '10.0.0.0' }]);
    for (const bad of ["[ipv4-addr:value = '1.2.3.4'", "ipv4-addr:value = '1.2.3.4'", "[file:hashes.SHA-256 = 'ab']", "[url:value = 'it's']", "[domain-name:value == 'x']"]) {
      expect(() => checkPattern(bad), bad).toThrow(/pattern:/);
    }
  });

  it('writes patterns the grammar accepts, escaping quotes and backslashes', () => {
    expect(patternString("a'b\\c")).toBe("'a\\'b\\\\c'");
    const url = "http://example.com/it's\\here";
    expect(checkPattern(stixPattern({ kind: 'url', value: url }))).toEqual([{ objectType: 'url', path: ['value'], operator: '=', value: url }]);
    expect(checkPattern(stixPattern({ kind: 'ipv4', value: '10.0.0.0/8', isNetwork: true }))).toEqual([{ objectType: 'ipv4-addr', path: ['value'], operator: 'ISSUBSET', value: '10.0.0.0/8' }]);
    expect(checkPattern(stixPattern({ kind: 'file', md5: MD5, sha1: null, sha256: SHA256, fileName: '', fileType: 'text/plain' }))).toEqual([
      { objectType: 'file', path: ['hashes', 'MD5'], operator: '=', value: MD5 },
      { objectType: 'file', path: ['hashes', 'SHA-256'], operator: '=', value: SHA256 },
    ]);
  });

  it('derives stable STIX ids in the UUIDv4 layout the schemas require', () => {
    expect(stableStixId('indicator', 'domain:a.example')).toBe(stableStixId('indicator', 'domain:a.example'));
    expect(stableStixId('indicator', 'domain:a.example')).not.toBe(stableStixId('indicator', 'domain:b.example'));
    expect(stableStixId('identity', 'Rampart')).toMatch(/^identity--[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('builds a valid bundle for a whitelisted IPv4 network (no observable: the schema takes single addresses)', () => {
    const bundle = stixBundle({ subject: { kind: 'ipv4', value: '198.51.100.0/24', isNetwork: true }, score: 10, entryTs: 1_700_000_000, ts: 1_700_000_500, members: 1, events: 1, tags: [], decision: 0 });
    expect(validate(bundle)).toEqual([]);
    expect(bundle.objects.map((o) => o.type)).toEqual(['identity', 'indicator', 'sighting']);
    expect(bundle.objects[1]).toMatchObject({ labels: ['benign'], pattern: "[ipv4-addr:value ISSUBSET '198.51.100.0/24']" });
  });
});

describe.each(oracle ? driverCases() : [])('GET /stix2/{id} on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  const validate = bundleValidator();
  const get = (url: string) => app.inject({ url: `/api/v1/stix2/${url}`, headers: { authorization: acme.keys.reader } });

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { trust: 0.7, credits: 10_000 });
    const send = (url: string, payload: object) => app.inject({ method: 'POST', url: `/api/v1${url}`, headers: { authorization: acme.keys.contributor }, payload });
    expect((await send('/domains', { domain: 'Evil.Example.', confidence: 0.9, tags: ['phishing'] })).statusCode).toBe(200);
    expect((await send('/urls', { url: "http://evil.example/it's/login?next=a|b", confidence: 0.9 })).statusCode).toBe(200);
    expect((await send('/files', { md5: MD5, sha1: SHA1, sha256: SHA256, file_type: 'application/vnd.microsoft.portable-executable', file_name: 'eicar.com', confidence: 1 })).statusCode).toBe(200);
    // IPv4 indicators as the IPv4 store holds them (its report route is built elsewhere).
    await sqlOf(store).query(
      `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events, tags)
       values ('RMP-RULE-GID-STIX1', '203.0.113.7/32', false, 321, 1700000600, 1700000000, 3, 9, '{ssh}')`,
    );
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it.each([
    ['IPv4 address', '203.0.113.7', "[ipv4-addr:value = '203.0.113.7']", { type: 'ipv4-addr', value: '203.0.113.7' }],
    ['domain', 'EVIL.example', "[domain-name:value = 'evil.example']", { type: 'domain-name', value: 'evil.example' }],
    ['URL', encodeURIComponent("http://EVIL.example:80/it's/login?next=a|b"), "[url:value = 'http://evil.example/it\\'s/login?next=a|b']", { type: 'url', value: "http://evil.example/it's/login?next=a%7Cb" }],
    ['MD5', MD5.toLowerCase(), `[file:hashes.MD5 = '${MD5}' OR file:hashes.'SHA-1' = '${SHA1}' OR file:hashes.'SHA-256' = '${SHA256}']`, { type: 'file', hashes: { MD5, 'SHA-1': SHA1, 'SHA-256': SHA256 }, name: 'eicar.com', mime_type: 'application/vnd.microsoft.portable-executable' }],
    ['SHA256', SHA256, `[file:hashes.MD5 = '${MD5}' OR file:hashes.'SHA-1' = '${SHA1}' OR file:hashes.'SHA-256' = '${SHA256}']`, { type: 'file', hashes: { MD5, 'SHA-1': SHA1, 'SHA-256': SHA256 }, name: 'eicar.com', mime_type: 'application/vnd.microsoft.portable-executable' }],
  ])('answers a valid bundle for a %s', async (_kind, id, pattern, observed) => {
    const res = await get(id);
    expect(res.statusCode).toBe(200);
    const bundle = Stix2Bundle.parse(res.json());
    expect(validate(bundle)).toEqual([]);
    expect(bundle.spec_version).toBe('2.0');
    expect(bundle.objects.map((o) => o.type)).toEqual(['identity', 'indicator', 'observed-data', 'sighting']);
    const [identity, indicator, observedData, sighting] = bundle.objects as Array<Record<string, unknown>>;
    expect(identity).toMatchObject({ name: 'Rampart', identity_class: 'organization' });
    expect(indicator).toMatchObject({ pattern, labels: ['malicious-activity'], created_by_ref: identity!.id, x_rampart_decision: -1 });
    expect(checkPattern(pattern).length).toBeGreaterThan(0);
    expect(observedData!.objects).toEqual({ '0': observed });
    expect(sighting).toMatchObject({ sighting_of_ref: indicator!.id, observed_data_refs: [observedData!.id], where_sighted_refs: [identity!.id] });
    // The same indicator keeps its object ids; only the bundle is new.
    const again = Stix2Bundle.parse((await get(id)).json());
    expect(again.objects.map((o) => o.id)).toEqual(bundle.objects.map((o) => o.id));
    expect(again.id).not.toBe(bundle.id);
  });

  it('carries the report facts of an IPv4 indicator', async () => {
    const bundle = (await get('203.0.113.7')).json();
    const [, indicator, observed, sighting] = bundle.objects;
    expect(indicator).toMatchObject({ created: '2023-11-14T22:13:20.000Z', modified: '2023-11-14T22:23:20.000Z', valid_from: '2023-11-14T22:23:20.000Z', x_rampart_score: 321, x_rampart_tags: ['ssh'] });
    expect(observed).toMatchObject({ first_observed: '2023-11-14T22:13:20.000Z', last_observed: '2023-11-14T22:23:20.000Z', number_observed: 9 });
    expect(sighting).toMatchObject({ count: 9 });
  });

  it('describes a digest only the archive holds', async () => {
    const hex = 'C0FFEE'.repeat(10) + 'C0FF';
    await store.files.archive([{ md5: Buffer.alloc(16, 1), sha1: Buffer.alloc(20, 2), sha256: Buffer.from(hex, 'hex'), file_type: 'application/zip', file_name: 'old.zip', score: 700, ts: 1_600_000_000, tags: [] }]);
    const res = await get(hex.toLowerCase());
    expect(res.statusCode).toBe(200);
    const bundle = res.json();
    expect(validate(bundle)).toEqual([]);
    expect(bundle.objects[1]).toMatchObject({ x_rampart_score: 700, valid_from: '2020-09-13T12:26:40.000Z' });
    expect(bundle.objects[2].objects['0']).toEqual({ type: 'file', hashes: { MD5: '01'.repeat(16).toUpperCase(), 'SHA-1': '02'.repeat(20), 'SHA-256': hex }, name: 'old.zip', mime_type: 'application/zip' });
  });

  it('answers 404 for unknown indicators and 400 for ids of no kind, without charging', async () => {
    for (const id of ['198.51.100.99', 'unknown.example', encodeURIComponent('https://unknown.example/'), 'ab'.repeat(16)]) {
      const res = await get(id);
      expect(res.statusCode, id).toBe(404);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
      expect(res.headers['x-coins-cost']).toBe('0');
    }
    for (const id of ['not_an_indicator', encodeURIComponent('javascript:alert(1)'), '999.1.1.1']) {
      const res = await get(id);
      expect(res.statusCode, id).toBe(400);
      expect(res.json().errors).toEqual([{ path: 'params.stix2id', message: expect.any(String) }]);
    }
  });
});
