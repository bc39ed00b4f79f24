import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { liveScore, secondsUntilBelow } from '@rampart/scoring';
import { domainCodec, fileCodec, urlCodec } from '@rampart/plugin-kit';
import { NamedBlockState, diffNamedSets, countNamedRemovals, EMPTY_NAMED_SET } from '../src/sync/named-block-state.ts';
import { NamedFeedStateFile } from '../src/sync/named-feed-state.ts';
import { NamedNeverBlock, forKind } from '../src/sync/named-never-block.ts';
import { NeverBlock } from '../src/sync/never-block.ts';

const now = 1_800_000_000;
const policy = { threshold: 50, maximumRules: 1000 };
const ipv4 = new NeverBlock({ ownAddresses: [], controlPlane: ['45.77.1.1'], reservedIps: [], allowList: [] });
const list = (o: Partial<ConstructorParameters<typeof NamedNeverBlock>[0]> = {}) => new NamedNeverBlock({ controlPlane: [], domains: [], urls: [], digests: [], ipv4, ...o });
const MD5 = 'A'.repeat(32);
const SHA1 = 'B'.repeat(40);
const SHA256 = 'C'.repeat(64);

describe('named block state', () => {
  it('keeps one entry per indicator in canonical form; decisions take precedence over the score', () => {
    const s = new NamedBlockState(domainCodec, forKind(list(), 'domain'));
    s.ingestRecord({ values: ['Evil.Example.'], score: 300, ts: now, decision: -1 });
    s.ingestRecord({ values: ['evil.example'], score: 400, ts: now, decision: -1 });
    s.ingestRecord({ values: ['low.example'], score: 10, ts: now, decision: -1 });
    s.ingestRecord({ values: ['white.example'], score: 900, ts: now, decision: 0 });
    s.ingestRecord({ values: ['localhost'], score: 900, ts: now, decision: -1 });
    expect(s.size).toBe(3);
    expect(s.evaluate(now, policy)).toMatchObject({ values: ['evil.example'], ranks: [Math.round(liveScore(400, 0))], cut: 0 });
    expect(s.applyDecision('LOW.example', 1, null, now)).toBe(true);
    // A whitelist on a name nobody reported is kept: enforcers that block a parent exempt it.
    expect(s.applyDecision('nobody.example', 0, null, now)).toBe(true);
    expect(s.size).toBe(4);
    expect(s.allowed()).toEqual(['nobody.example', 'white.example']);
    s.prune(now);
    expect(s.allowed()).toEqual(['nobody.example', 'white.example']);
    // A cleared decision on a name nobody reported adds nothing.
    expect(s.applyDecision('cleared.example', -1, null, now)).toBe(true);
    expect(s.size).toBe(4);
    expect(s.applyDecision('not a domain', 1, null, now)).toBe(false);
    expect(s.evaluate(now, policy).values).toEqual(['evil.example', 'low.example']);
    expect(s.evaluate(now, policy).ranks).toEqual([400, 1001]);
  });

  it('drops a pushed decision the feed already delivered, or one older than a push applied, as on IPv4 (the push carries its feed second)', () => {
    const s = new NamedBlockState(domainCodec, forKind(list(), 'domain'));
    const listed = () => s.evaluate(now + 10, policy).values;
    // Cleared at now, blacklisted at now + 1; the feed read the newer state first and the clear's push came after it.
    s.ingestRecord({ values: ['late.example'], score: 0, ts: now + 1, decision: 1 });
    expect(s.applyDecision('late.example', -1, null, now + 1, now)).toBe(false);
    expect(s.applyDecision('Late.Example.', 0, null, now + 1, now + 1)).toBe(false);
    expect(listed()).toEqual(['late.example']);
    // A newer push applies; one older than it, arriving late, does not; one of the same second does.
    expect(s.applyDecision('late.example', 0, null, now + 3, now + 3)).toBe(true);
    expect(listed()).toEqual([]);
    expect(s.applyDecision('late.example', 1, null, now + 3, now + 2)).toBe(false);
    expect(listed()).toEqual([]);
    expect(s.applyDecision('late.example', 1, null, now + 3, now + 3)).toBe(true);
    expect(listed()).toEqual(['late.example']);
    // A versioned clear waits for the record the feed re-delivers with it (its score may be newer than the last pull).
    expect(s.applyDecision('late.example', -1, null, now + 4, now + 4)).toBe(false);
    expect(listed()).toEqual(['late.example']);
    s.ingestRecord({ values: ['late.example'], score: 0, ts: now + 4, decision: -1 });
    expect(listed()).toEqual([]);
    // Once the feed has caught up with a push, an older push is judged by the record alone.
    expect(s.applyDecision('late.example', 1, null, now + 5, now + 3)).toBe(false);
    // A push without a version (an older server) applies as before.
    expect(s.applyDecision('late.example', 1, null, now + 5)).toBe(true);
    expect(listed()).toEqual(['late.example']);
  });

  it('a file is found by any of its digests: records that share one merge; each digest is an entry of its own', () => {
    const s = new NamedBlockState(fileCodec, forKind(list(), 'file'));
    s.ingestRecord({ values: ['', '', MD5.toLowerCase()], score: 200, ts: now, decision: -1 });
    s.ingestRecord({ values: [SHA256, SHA1, MD5], score: 300, ts: now, decision: -1 });
    expect(s.size).toBe(1);
    expect(s.get(SHA1.toLowerCase())?.values).toEqual([MD5, SHA1, SHA256]);
    expect(s.evaluate(now, policy).values).toEqual([MD5, SHA1, SHA256]);
    // A whitelist pushed for one digest lifts the file.
    s.applyDecision(SHA1, 0, null, now);
    expect(s.evaluate(now, policy).values).toEqual([]);
  });

  it('the server list marks entries LISTED, adds list-only ones and prunes what it no longer names', () => {
    const s = new NamedBlockState(urlCodec, forKind(list(), 'url'));
    s.ingestRecord({ values: ['http://a.example/x'], score: 10, ts: now, decision: -1 });
    expect(s.applyServerList(['HTTP://B.example:80/y', 'nonsense'], now)).toBe(1);
    // Listed by the server below our threshold: a rule the feed does not carry; trusted at the threshold.
    expect(s.evaluate(now, policy)).toMatchObject({ values: ['http://b.example/y'], ranks: [50] });
    s.applyServerList([], now + 1);
    expect(s.size).toBe(1);
    expect(s.evaluate(now, policy).values).toEqual([]);
  });

  it('drops a listed decision on a value nobody reported as soon as it is cleared, pushed or fed (a record of score 0)', () => {
    // The server lists such a decision (migration 0018) and feeds it as a record of score 0.
    const s = new NamedBlockState(domainCodec, forKind(list(), 'domain'));
    s.applyDecision('pushed.example', 1, null, now);
    s.ingestRecord({ values: ['fed.example'], score: 0, ts: now, decision: 1 });
    s.applyServerList(['pushed.example', 'fed.example'], now);
    s.ingestRecord({ values: ['pushed.example'], score: 0, ts: now, decision: 1 });
    expect(s.evaluate(now, policy).values).toEqual(['fed.example', 'pushed.example']);
    // The clear arrives as a push for one (then its record), as the feed's record (decision null) for the other:
    // the server lists neither any more, so neither waits for the next reconcile.
    s.applyDecision('pushed.example', -1, null, now + 1);
    s.ingestRecord({ values: ['fed.example'], score: 0, ts: now + 1, decision: -1 });
    expect(s.evaluate(now + 1, policy).values).toEqual([]);
    // An entry known only from the list (no record, no decision) is still trusted.
    s.applyServerList(['listed.example'], now + 2);
    expect(s.evaluate(now + 2, policy).values).toEqual(['listed.example']);
  });

  it('decays locally: the entry leaves at the second its live score falls below the threshold', () => {
    const s = new NamedBlockState(domainCodec, forKind(list(), 'domain'));
    s.ingestRecord({ values: ['fading.example'], score: 60, ts: now, decision: -1 });
    const below = now + Math.ceil(secondsUntilBelow(60, 50));
    expect(s.nextChange(now, policy)).toBe(now + secondsUntilBelow(60, 50));
    expect(s.evaluate(below - 2, policy).values).toEqual(['fading.example']);
    expect(s.evaluate(below, policy).values).toEqual([]);
  });

  it('maximum_rules keeps the highest ranks; counts what the never-block list protects', () => {
    const s = new NamedBlockState(domainCodec, forKind(list({ domains: ['safe.example'] }), 'domain'));
    for (const [d, score] of [['a.example', 100], ['b.example', 300], ['c.example', 200], ['www.safe.example', 900]] as const) s.ingestRecord({ values: [d], score, ts: now, decision: -1 });
    expect(s.evaluate(now, { ...policy, maximumRules: 2 })).toMatchObject({ values: ['b.example', 'c.example'], cut: 1, protectedCount: 1 });
  });

  it('diffs and counts removals between sets', () => {
    const s = new NamedBlockState(domainCodec, forKind(list(), 'domain'));
    s.ingestRecord({ values: ['a.example'], score: 100, ts: now, decision: -1 });
    s.ingestRecord({ values: ['b.example'], score: 100, ts: now, decision: -1 });
    const first = s.evaluate(now, policy);
    s.applyDecision('a.example', 0, null, now);
    s.ingestRecord({ values: ['c.example'], score: 200, ts: now, decision: -1 });
    const second = s.evaluate(now, policy);
    expect(diffNamedSets(first, second)).toEqual({ add: [{ value: 'c.example', score: 200 }], remove: ['a.example'] });
    expect(countNamedRemovals(first, second)).toBe(1);
    expect(diffNamedSets(EMPTY_NAMED_SET, first).remove).toEqual([]);
  });
});

describe('named never-block list', () => {
  it('domains: the name, its sub-domains and its parents', () => {
    const n = list({ controlPlane: ['rampart.corp.example'], domains: ['Safe.Example.'] });
    expect(n.protectsDomain('rampart.corp.example')).toBe('control_plane');
    expect(n.protectsDomain('api.rampart.corp.example')).toBe('control_plane');
    expect(n.protectsDomain('corp.example')).toBe('control_plane');
    expect(n.protectsDomain('www.safe.example')).toBe('allow_list');
    expect(n.protectsDomain('notsafe.example')).toBeUndefined();
    expect(n.protectsDomain('evil.example')).toBeUndefined();
  });

  it('URLs: a protected host (name or IPv4 of the IPv4 list) or an allowed prefix', () => {
    const n = list({ controlPlane: ['rampart.corp.example'], urls: ['HTTPS://Partner.Example/api/'] });
    expect(n.protectsUrl('https://rampart.corp.example/api/v1')).toBe('control_plane');
    expect(n.protectsUrl('http://45.77.1.1/x')).toBe('control_plane');
    expect(n.protectsUrl('http://10.1.2.3/x')).toBe('special_range');
    expect(n.protectsUrl('https://partner.example/api/orders')).toBe('allow_list');
    expect(n.protectsUrl('https://partner.example/login')).toBeUndefined();
    expect(n.protectsUrl('http://45.77.1.2/x')).toBeUndefined();
  });

  it('files: any digest of the record', () => {
    const n = list({ digests: [SHA1.toLowerCase()] });
    expect(n.protectsValues('file', [MD5, SHA1, SHA256])).toBe('allow_list');
    expect(n.protectsValues('file', [MD5, SHA256])).toBeUndefined();
  });
});

describe('named feed state file', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
  });

  it('saves and restores the cursor with the records it covers; ignores a file it cannot read', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'named-feed-'));
    dirs.push(dir);
    const s = new NamedBlockState(fileCodec, forKind(list(), 'file'));
    s.ingestRecord({ values: [SHA256, SHA1, MD5], score: 300, ts: now, decision: -1 });
    s.applyDecision(SHA256.replace(/C$/, 'D'), 1, null, now);
    const file = new NamedFeedStateFile(dir, 'file');
    await file.save({ cursor: now + 5, listedAt: now, entries: s.entries() });
    const loaded = (await file.load())!;
    expect(loaded.cursor).toBe(now + 5);
    const restored = new NamedBlockState(fileCodec, forKind(list(), 'file'));
    for (const e of loaded.entries) restored.restore(e);
    expect(restored.evaluate(now, policy)).toEqual(s.evaluate(now, policy));
    expect(await new NamedFeedStateFile(dir, 'domain').load()).toBeUndefined();
    await writeFile(file.path, '{"version":1,');
    expect(await file.load()).toBeUndefined();
    await writeFile(file.path, JSON.stringify({ version: 1, kind: 'url', cursor: 1, listed_at: 0, entries: [] }));
    expect(await file.load()).toBeUndefined();
  });
});
