import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { liveScore, secondsUntilBelow } from '@rampart/scoring';
import { BlockState, diffKeySets, toEntries } from '../src/sync/block-state.ts';
import { NeverBlock } from '../src/sync/never-block.ts';
import { RecordTable } from '../src/sync/record-table.ts';
import { FeedStateFile } from '../src/sync/feed-state.ts';
import { ipv4Key as cidrKey, ipv4KeyCidr as keyCidr } from '@rampart/contracts';

const none: { ownAddresses: string[]; controlPlane: string[]; reservedIps: string[]; allowList: string[] } = { ownAddresses: [], controlPlane: [], reservedIps: [], allowList: [] };
const NOW = 1_800_000_000;
const policy = { threshold: 100, maximumRules: 1000 };

function state(extra: Partial<typeof none> = {}) {
  return new BlockState(new NeverBlock({ ...none, ...extra }));
}
const cidrs = (s: BlockState, now = NOW, p = policy) => toEntries(s.evaluate(now, p)).map((e) => e.value);

describe('record table', () => {
  it('agrees with a Map under random inserts, updates and deletes, across growth', () => {
    const table = new RecordTable(4);
    const model = new Map<number, number>();
    let seed = 7;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % 5000);
    for (let i = 0; i < 20_000; i++) {
      const key = rand() * 64 + (rand() % 33);
      if (rand() % 3 === 0) {
        expect(table.delete(key)).toBe(model.delete(key));
      } else {
        const s0 = (rand() % 1000) + 1;
        table.set({ key, s0, ts: i, decision: -1, ttl: null, flags: 0 });
        model.set(key, s0);
      }
    }
    expect(table.size).toBe(model.size);
    for (const [key, s0] of model) expect(table.get(key)?.s0).toBe(s0);
    const copy = RecordTable.deserialize(table.serialize());
    expect([...copy.entries()].sort((a, b) => a.key - b.key)).toEqual([...table.entries()].sort((a, b) => a.key - b.key));
    // With headroom for a file header: the same snapshot after it, the headroom left to the caller.
    const withHeader = table.serialize(24);
    expect(withHeader.subarray(24)).toEqual(table.serialize());
    expect([...RecordTable.deserialize(withHeader.subarray(24)).entries()].length).toBe(table.size);
  });
});

describe('block state', () => {
  it('blocks by live score, decays locally, honours decisions and ttl, and never blocks protected ranges', () => {
    const s = state({ allowList: ['45.1.1.4'], reservedIps: ['45.1.2.0/24'] });
    s.ingestRecord({ ip: '45.1.1.1', score: 300, ts: NOW, decision: -1, ttl: null });
    s.ingestRecord({ ip: '45.1.1.2', score: 50, ts: NOW, decision: -1, ttl: null }); // below threshold
    s.ingestRecord({ ip: '45.1.1.3', score: 50, ts: NOW, decision: 1, ttl: NOW + 60 }); // blacklisted for a minute
    s.ingestRecord({ ip: '45.1.1.4', score: 900, ts: NOW, decision: -1, ttl: null }); // allow-list
    s.ingestRecord({ ip: '45.1.2.9', score: 900, ts: NOW, decision: -1, ttl: null }); // reserved_ips
    s.ingestRecord({ ip: '10.1.2.3', score: 900, ts: NOW, decision: -1, ttl: null }); // private
    s.ingestRecord({ ip: '45.1.1.5', score: 900, ts: NOW, decision: 0, ttl: null }); // whitelisted
    s.ingestRecord({ ip: '45.0.0.0/8', score: 900, ts: NOW, decision: -1, ttl: null }); // contains allow-listed addresses
    expect(cidrs(s)).toEqual(['45.1.1.1/32', '45.1.1.3/32']);
    expect(s.evaluate(NOW, policy).protectedCount).toBe(4);
    // The blacklist ends at its ttl; then 45.1.1.1 stays until its live score falls below 100.
    expect(cidrs(s, NOW + 61)).toEqual(['45.1.1.1/32']);
    const below = NOW + Math.ceil(secondsUntilBelow(300, 100));
    expect(liveScore(300, below - NOW)).toBeLessThan(100);
    expect(cidrs(s, below - 2)).toEqual(['45.1.1.1/32']);
    expect(cidrs(s, below)).toEqual([]);
    expect(s.nextChange(NOW, policy)).toBe(NOW + 60);
  });

  it('keeps the highest live scores when maximum_rules is reached', () => {
    const s = state();
    [400, 150, 900, 200].forEach((score, i) => s.ingestRecord({ ip: `45.2.0.${i + 1}`, score, ts: NOW, decision: -1, ttl: null }));
    s.ingestRecord({ ip: '45.2.0.9', score: 101, ts: NOW, decision: 1, ttl: null });
    const result = s.evaluate(NOW, { threshold: 100, maximumRules: 3 });
    expect(toEntries(result)).toEqual([
      { value: '45.2.0.1/32', score: 400 },
      { value: '45.2.0.3/32', score: 900 },
      { value: '45.2.0.9/32', score: 1001 },
    ]);
    expect(result.cut).toBe(2);
  });

  it('trusts the server list for entries it cannot judge, until a newer record says otherwise', () => {
    const s = state();
    s.ingestRecord({ ip: '45.3.0.1', score: 80, ts: NOW, decision: -1, ttl: null }); // below threshold, but listed (blocking rule)
    s.applyServerList([cidrKey('45.3.0.1'), cidrKey('45.3.0.2')], NOW);
    const rule = { ...policy, blockingRule: { score: 50, tags: ['ssh'] } };
    expect(cidrs(s, NOW, rule)).toEqual(['45.3.0.1/32', '45.3.0.2/32']);
    s.ingestRecord({ ip: '45.3.0.1', score: 60, ts: NOW + 10, decision: -1, ttl: null });
    expect(cidrs(s, NOW + 10, rule)).toEqual(['45.3.0.2/32']);
    s.applyServerList([], NOW + 20);
    expect(cidrs(s, NOW + 20, rule)).toEqual([]);
    expect(s.table.size).toBe(1);
  });

  it('drops a listed decision on a value nobody reported as soon as it is cleared, pushed or fed (a record of score 0)', () => {
    // Pushed first (decision_changed), then listed by the server (a full reconcile), then its record fed.
    const s = state();
    s.applyDecision('45.3.1.1', 1, null, NOW);
    s.applyDecision('45.3.1.0/24', 1, null, NOW);
    s.applyServerList([cidrKey('45.3.1.1'), cidrKey('45.3.1.0/24')], NOW);
    s.ingestRecord({ ip: '45.3.1.0/24', score: 0, ts: NOW, decision: 1, ttl: null });
    expect(cidrs(s)).toEqual(['45.3.1.0/24', '45.3.1.1/32']);
    // The clear arrives as a push for one, as the feed's record (decision null, score 0) for the other:
    // the server lists neither any more, so neither waits for the next reconcile.
    s.applyDecision('45.3.1.0/24', -1, null, NOW + 1);
    s.ingestRecord({ ip: '45.3.1.1', score: 0, ts: NOW + 1, decision: -1, ttl: null });
    expect(cidrs(s, NOW + 1)).toEqual([]);
    // An entry known only from the list (no record, no decision) is still trusted.
    s.applyServerList([cidrKey('45.3.2.2')], NOW + 2);
    expect(cidrs(s, NOW + 2)).toEqual(['45.3.2.2/32']);
  });

  it('drops a pushed decision the feed already delivered, or one older than a push applied (issue 30: a listed address removed)', () => {
    const s = state();
    // Cleared at NOW, blacklisted at NOW + 1; the feed read the newer state first (the record's ts is
    // the blacklist's second), and the clear's push, queued behind that pull, comes after it.
    s.ingestRecord({ ip: '45.3.1.9', score: 40, ts: NOW + 1, decision: 1, ttl: null });
    expect(s.applyDecision('45.3.1.9', -1, null, NOW + 1, NOW)).toBe(false);
    // The same second: the feed serves a second once it is settled, so it holds every change made in it.
    expect(s.applyDecision('45.3.1.9', 0, null, NOW + 1, NOW + 1)).toBe(false);
    expect(cidrs(s, NOW + 1)).toEqual(['45.3.1.9/32']);
    // A newer push applies; a push older than it, arriving late, does not; one of the same second does (they come in order).
    expect(s.applyDecision('45.3.1.9', 0, null, NOW + 3, NOW + 3)).toBe(true);
    expect(cidrs(s, NOW + 3)).toEqual([]);
    expect(s.applyDecision('45.3.1.9', 1, null, NOW + 3, NOW + 2)).toBe(false);
    expect(cidrs(s, NOW + 3)).toEqual([]);
    expect(s.applyDecision('45.3.1.9', 1, null, NOW + 3, NOW + 3)).toBe(true);
    expect(cidrs(s, NOW + 3)).toEqual(['45.3.1.9/32']);
    // The same on a value nobody reported (no record yet): the push order alone decides.
    expect(s.applyDecision('45.3.2.0/24', 1, null, NOW + 5, NOW + 5)).toBe(true);
    expect(s.applyDecision('45.3.2.0/24', -1, null, NOW + 5, NOW + 4)).toBe(false);
    expect(cidrs(s, NOW + 5)).toEqual(['45.3.1.9/32', '45.3.2.0/24']);
    // A clear waits for the record the feed re-delivers with it: the score it falls back to may be newer
    // than the feed read (a report since), so it takes nothing away by itself.
    s.ingestRecord({ ip: '45.3.1.7', score: 0, ts: NOW + 5, decision: 1, ttl: null });
    expect(s.applyDecision('45.3.1.7', -1, null, NOW + 6, NOW + 6)).toBe(false);
    expect(cidrs(s, NOW + 6)).toEqual(['45.3.1.7/32', '45.3.1.9/32', '45.3.2.0/24']);
    s.ingestRecord({ ip: '45.3.1.7', score: 150, ts: NOW + 6, decision: -1, ttl: null });
    expect(cidrs(s, NOW + 6)).toEqual(['45.3.1.7/32', '45.3.1.9/32', '45.3.2.0/24']);
    s.ingestRecord({ ip: '45.3.2.0/24', score: 0, ts: NOW + 6, decision: -1, ttl: null });
    expect(cidrs(s, NOW + 6)).toEqual(['45.3.1.7/32', '45.3.1.9/32']);
    // A push without a version (an older server) applies as before.
    expect(s.applyDecision('45.3.1.9', -1, null, NOW + 6)).toBe(true);
    expect(cidrs(s, NOW + 6)).toEqual(['45.3.1.7/32']);
  });

  it('diffs two sets by membership only', () => {
    const k = (c: string) => cidrKey(c);
    const from = { keys: Float64Array.from([k('45.0.0.1'), k('45.0.0.2'), k('45.0.0.3')]), ranks: Uint16Array.from([1, 2, 3]) };
    const to = { keys: Float64Array.from([k('45.0.0.2'), k('45.0.0.3'), k('45.0.0.4')]), ranks: Uint16Array.from([9, 9, 9]) };
    expect(diffKeySets(from, to)).toEqual({ add: [{ value: '45.0.0.4/32', score: 9 }], remove: ['45.0.0.1/32'] });
    expect(keyCidr(k('45.0.0.77/24'))).toBe('45.0.0.0/24');
  });
});

describe('never-block list', () => {
  it('protects special ranges, own and control-plane addresses, reserved IPs and the allow-list (IPv4 and IPv6)', () => {
    const nb = new NeverBlock({ ownAddresses: ['45.9.9.9', '2a01:4f8::1'], controlPlane: ['46.1.1.1'], reservedIps: ['47.0.0.0/16'], allowList: ['48.1.2.3', '2a02:1::/32'] });
    const cases: [string, string | undefined][] = [
      ['127.0.0.1', 'special_range'],
      ['10.9.8.7', 'special_range'],
      ['192.168.1.1', 'special_range'],
      ['169.254.1.1', 'special_range'],
      ['224.0.0.5', 'special_range'],
      ['203.0.113.7', 'special_range'],
      ['0.0.0.0/0', 'special_range'],
      ['45.9.9.9', 'own_address'],
      ['46.1.1.1', 'control_plane'],
      ['47.0.200.1', 'reserved_ip'],
      ['48.1.2.3', 'allow_list'],
      ['48.1.2.0/24', 'allow_list'],
      ['48.1.2.4', undefined],
      ['8.8.8.8', undefined],
      ['::1', 'special_range'],
      ['fe80::1', 'special_range'],
      ['2a01:4f8::1', 'own_address'],
      ['2a02:1:5::9', 'allow_list'],
      ['2a03::1', undefined],
      ['::ffff:10.0.0.1', 'special_range'],
      ['garbage', 'special_range'],
    ];
    expect(cases.map(([ip]) => [ip, nb.protects(ip)])).toEqual(cases);
  });
});

describe('feed state file', () => {
  it('saves the cursor and the table in one file and loads them back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'feed-state-'));
    try {
      const table = new RecordTable();
      for (let i = 0; i < 3000; i++) table.set({ key: cidrKey(`45.2.${i >> 8}.${i & 255}`), s0: 1 + (i % 900), ts: NOW - i, decision: i % 7 === 0 ? 1 : -1, ttl: i % 5 === 0 ? NOW + i : null, flags: i % 8 });
      const file = new FeedStateFile(dir);
      await file.save({ cursor: 1234.5, listedAt: NOW, table });
      const back = await file.load();
      expect(back?.cursor).toBe(1234.5);
      expect(back?.listedAt).toBe(NOW);
      expect([...back!.table.entries()].sort((a, b) => a.key - b.key)).toEqual([...table.entries()].sort((a, b) => a.key - b.key));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
