import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatIpv4, parseIpv4 } from '@rampart/contracts';
import { isBlocked, liveScore, type BlockReason } from '@rampart/scoring';
import { createEnrichment } from '../src/services/enrichment/enrichment.ts';
import { Ipv4Mirror } from '../src/services/ipv4/mirror/index.ts';
import { ipv4ListFilter, type Ipv4Policy } from '../src/services/ipv4/policy.ts';
import type { Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg } from './support/app.ts';

/*
 * One blocking rule, three implementations: `isBlocked` (packages/scoring, the rule as written),
 * `listWhere` (the SQL of the plain-text lists, store/ipv4.ts) and the mirror's `nextListed`
 * (services/ipv4/mirror). Over random indicators (networks, scores, clock times, tags and
 * sources, anchors of the listing organization and of another), decisions (-1, 0, 1, with and
 * without a ttl, nested networks), reserved ranges, blocking rules, delays, thresholds and
 * instants, the three must list exactly the same networks, and the SQL and the mirror the same
 * version (the ETag's input). A rule with tags is SQL's alone: the mirror must decline it.
 */

/** Runs per store; the note of issue 19 records it. */
const RUNS = Number(process.env.BLOCKING_RULE_RUNS ?? 120);
// A fixed seed by default, so that the check that every verdict reason occurred cannot fail by
// chance (a random seed missed `blocking_rule` once in CI); BLOCKING_RULE_SEED explores others.
const SEED = Number(process.env.BLOCKING_RULE_SEED ?? 20261126);

const SOURCES = ['ssh', 'waf', 'scan', 'smtp'] as const;
/** Two /22s of public space: networks, decisions and reserved ranges overlap often. */
const BASES = [parseIpv4('45.77.8.0')!.start, parseIpv4('185.220.100.0')!.start];

/** A canonical network (host bits cleared) in one of the two blocks. */
const network = (lens: number[]) =>
  fc.record({ base: fc.constantFrom(...BASES), offset: fc.integer({ min: 0, max: 1023 }), len: fc.constantFrom(...lens) }).map(({ base, offset, len }) => {
    const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
    return `${formatIpv4((((base + offset) & mask) >>> 0) as number)}/${len}`;
  });

/** Clock times: today, and instants past 2038-01-19 (ts is unsigned 32-bit in the mirror). */
const instant = fc.constantFrom(1_764_000_000, 2_200_000_000, 4_000_000_000);

interface Indicator {
  network: string;
  score: number;
  /** Seconds before `now` (negative: a ts in the future of the instant evaluated). */
  age: number;
  tags: string[];
  sources: string[];
  /** The listing organization's anchor (ts offset after the row's, score), if any. */
  anchor: { after: number; score: number } | null;
  /** Another organization's anchor, which must change nothing. */
  foreignAnchor: boolean;
}

interface Decision {
  network: string;
  decision: -1 | 0 | 1;
  /** ttl relative to now (null: none). */
  ttlIn: number | null;
  /** Taken by the other organization, which must change nothing. */
  foreign: boolean;
}

interface Scenario {
  now: number;
  indicators: Indicator[];
  decisions: Decision[];
  reserved: string[];
  rule: { score: number; tags: string[] } | null;
  threshold: number;
  /** The organization's delay in seconds (0: none). */
  delay: number;
}

const age = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 40 * 86_400 }) },
  { weight: 1, arbitrary: fc.integer({ min: -3 * 86_400, max: -1 }) },
  { weight: 1, arbitrary: fc.constantFrom(0, 1, 3_600, 9_000) },
);

const indicator: fc.Arbitrary<Indicator> = fc.record({
  network: network([32, 32, 32, 31, 30, 28, 24]),
  score: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.constantFrom(1, 2, 100, 999, 1000)),
  age,
  tags: fc.subarray([...SOURCES], { maxLength: 2 }),
  sources: fc.subarray([...SOURCES], { maxLength: 2 }),
  anchor: fc.option(fc.record({ after: fc.integer({ min: -3_600, max: 20 * 86_400 }), score: fc.integer({ min: 1, max: 1000 }) }), { freq: 3 }),
  foreignAnchor: fc.boolean(),
});

const decision: fc.Arbitrary<Decision> = fc.record({
  network: network([32, 30, 28, 26, 24, 22]),
  decision: fc.constantFrom(-1 as const, 0 as const, 1 as const),
  ttlIn: fc.option(fc.oneof(fc.integer({ min: -86_400, max: 30 * 86_400 }), fc.constant(0)), { freq: 2 }),
  foreign: fc.boolean(),
});

const scenario: fc.Arbitrary<Scenario> = fc.record({
  now: fc.tuple(instant, fc.integer({ min: 0, max: 86_399 })).map(([day, s]) => day + s),
  indicators: fc.uniqueArray(indicator, { maxLength: 40, selector: (i) => i.network }),
  decisions: fc.uniqueArray(decision, { maxLength: 12, selector: (d) => `${d.foreign}:${d.network}` }),
  reserved: fc.subarray(['45.77.8.0/30', '45.77.9.128/25', '185.220.100.7/32', '185.220.102.0/23', '2001:db8::/32']),
  // Mostly none: a rule with tags sends the list to SQL, so the mirror is compared without one.
  rule: fc.oneof(
    { weight: 3, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.record({ score: fc.integer({ min: 1, max: 1000 }), tags: fc.subarray([...SOURCES], { minLength: 1, maxLength: 2 }) }) },
  ),
  threshold: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.double({ min: 0.01, max: 1000.99, noNaN: true })),
  delay: fc.constantFrom(0, 0, 0, 3_600, 86_400),
});

/** How often each reason decided a record, over all runs: the property must have met them all. */
type Tally = Record<BlockReason | 'delayed' | 'mirror_compared' | 'unreported', number>;

/** The reference: each held record through `isBlocked`, as the specification states the rule. */
function expected(s: Scenario, tally: Tally): string[] {
  const ranges = s.reserved.flatMap((cidr) => (parseIpv4(cidr) ? [parseIpv4(cidr)!] : []));
  const own = s.decisions.filter((d) => !d.foreign).map((d) => ({ ...d, range: parseIpv4(d.network)! }));
  const listed: string[] = [];
  for (const i of s.indicators) {
    const r = parseIpv4(i.network)!;
    let ts = s.now - i.age;
    let score = i.score;
    if (i.anchor && i.anchor.after > 0) {
      ts += i.anchor.after;
      score = i.anchor.score;
    }
    if (s.delay > 0 && ts > s.now - s.delay) {
      tally.delayed++;
      continue;
    }
    // The most specific decision whose network contains (or is) the record's.
    const d = own.filter((x) => x.range.start <= r.start && r.end <= x.range.end).sort((a, b) => b.range.prefix - a.range.prefix)[0];
    const verdict = isBlocked({
      reserved: ranges.some((x) => x.start <= r.end && r.start <= x.end),
      decision: d ? d.decision : -1,
      ttl: d && d.ttlIn !== null ? s.now + d.ttlIn : null,
      now: s.now,
      liveScore: liveScore(score, s.now - ts),
      threshold: s.threshold,
      blockingRule: s.rule,
      tags: [...i.tags, ...i.sources],
    });
    tally[verdict.reason]++;
    if (verdict.blocked) listed.push(i.network);
  }
  for (const d of unheldBlacklists(s)) {
    tally.unreported++;
    listed.push(d.network);
  }
  return listed.sort();
}

/** When the seed dates a decision's last change (its record's ts, migration 0017). */
const DECIDED_AGO = 7_200;

/**
 * The organization's blacklists in force on networks no indicator is (decisions.md: a decision
 * on a value nobody reported is listed for its organization), outside its reserved ranges and
 * visible after its delay: listed on their own, whatever the threshold.
 */
function unheldBlacklists(s: Scenario): Decision[] {
  const held = new Set(s.indicators.map((i) => i.network));
  const ranges = s.reserved.flatMap((cidr) => (parseIpv4(cidr) ? [parseIpv4(cidr)!] : []));
  return s.decisions.filter((d) => {
    const r = parseIpv4(d.network)!;
    return (
      !d.foreign &&
      !held.has(d.network) &&
      d.decision === 1 &&
      (d.ttlIn === null || d.ttlIn > 0) &&
      !ranges.some((x) => x.start <= r.end && r.start <= x.end) &&
      (s.delay === 0 || s.now - DECIDED_AGO <= s.now - s.delay)
    );
  });
}

describe.each(driverCases())('one blocking rule: isBlocked, SQL and the mirror agree, on $name', (driver) => {
  let store: Store;
  let mirror: Ipv4Mirror;
  let orgId: number;
  let otherId: number;

  beforeAll(async () => {
    store = await driver.open();
    orgId = (await seedOrg(store)).org.id;
    otherId = (await seedOrg(store)).org.id;
    mirror = new Ipv4Mirror(store.ipv4Mirror, createEnrichment());
    await mirror.start();
    expect(mirror.ready).toBe(true);
  }, 60_000);
  afterAll(async () => {
    mirror.close();
    await store.close();
  });

  /** Replaces the held records, anchors and decisions with the scenario's (as another replica would write them). */
  async function seed(s: Scenario): Promise<Map<string, number>> {
    const db = sqlOf(store);
    await db.query('delete from ipv4_decisions');
    await db.query('delete from ipv4_indicators');
    const ids = new Map<string, number>();
    if (s.indicators.length > 0) {
      const res = await db.query<{ id: number; network: string }>(
        `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, tags, sources)
         select 'RMP-RULE-GID-P' || n, n::cidr, masklen(n::cidr) < 32, sc, t, t,
                array(select jsonb_array_elements_text(tg)), array(select jsonb_array_elements_text(so))
         from unnest($1::text[], $2::integer[], $3::bigint[], $4::jsonb[], $5::jsonb[]) as x(n, sc, t, tg, so)
         returning id, network::text as network`,
        [
          s.indicators.map((i) => i.network),
          s.indicators.map((i) => i.score),
          s.indicators.map((i) => s.now - i.age),
          s.indicators.map((i) => JSON.stringify(i.tags)),
          s.indicators.map((i) => JSON.stringify(i.sources)),
        ],
      );
      for (const r of res.rows) ids.set(r.network, Number(r.id));
    }
    for (const i of s.indicators) {
      const id = ids.get(i.network)!;
      if (i.anchor) {
        await db.query('insert into ipv4_org_anchors (org_id, indicator_id, ts, score) values ($1, $2, $3, $4)', [orgId, id, s.now - i.age + i.anchor.after, i.anchor.score]);
      }
      if (i.foreignAnchor) await db.query('insert into ipv4_org_anchors (org_id, indicator_id, ts, score) values ($1, $2, $3, 1000)', [otherId, id, s.now - i.age + 86_400]);
    }
    for (const d of s.decisions) {
      await db.query('insert into ipv4_decisions (org_id, network, decision, ttl, ts) values ($1, $2::cidr, $3, $4, $5)', [
        d.foreign ? otherId : orgId,
        d.network,
        d.decision,
        d.ttlIn === null ? null : s.now + d.ttlIn,
        s.now - DECIDED_AGO,
      ]);
    }
    return ids;
  }

  it(`lists the same networks over ${RUNS} random scenarios`, async () => {
    const tally: Tally = { reserved: 0, whitelist: 0, blacklist: 0, score: 0, blocking_rule: 0, below_threshold: 0, delayed: 0, mirror_compared: 0, unreported: 0 };
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        await seed(s);
        await mirror.catchUp();
        expect(mirror.ready).toBe(true);
        const policy: Ipv4Policy = {
          orgId,
          reserved: s.reserved,
          ranges: s.reserved.flatMap((c) => (parseIpv4(c) ? [parseIpv4(c)!] : [])),
          rule: s.rule,
        };
        const decisions = await store.ipv4.decisionsVersion(orgId);
        expect(mirror.decisionsVersion(orgId).count).toBe(decisions.count);
        const filter = ipv4ListFilter(policy, s.threshold, s.now, decisions.count > 0, s.delay > 0 ? s.now - s.delay : null);
        const want = expected(s, tally);

        const rows = await store.ipv4.listRows(filter, null, null, 10_000, 'address');
        const fromSql = rows.map((r) => r.network).sort();
        expect(fromSql, 'SQL').toEqual(want);

        const plan = mirror.plan(filter);
        if (s.rule) {
          // The rule's tags and sources are SQL's: the mirror must hand the list over.
          expect(plan).toBeNull();
          return;
        }
        if (s.decisions.some((d) => !d.foreign && d.decision === 1 && (d.ttlIn === null || d.ttlIn > 0) && !s.indicators.some((i) => i.network === d.network))) {
          // A blacklist in force on a value nobody reported is SQL's to list (migration 0017).
          expect(plan).toBeNull();
          return;
        }
        expect(plan).not.toBeNull();
        const text = mirror.addressText(plan!, null, null, 10_000, 'lines', true).text.toString();
        const fromMirror = text
          .split('\n')
          .filter(Boolean)
          .map((ip) => (ip.includes('/') ? ip : `${ip}/32`))
          .sort();
        expect(fromMirror, 'mirror').toEqual(want);
        expect(mirror.version(plan!, null, null), 'version').toBe(await store.ipv4.listVersion(filter, null, null));
        tally.mirror_compared++;
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    // Every branch of the rule decided some record, and the mirror was compared in most runs.
    for (const [reason, n] of Object.entries(tally)) expect(n, reason).toBeGreaterThan(0);
    // A third of the scenarios or more: those with a blacklist in force on a value nobody reported go to SQL.
    expect(tally.mirror_compared).toBeGreaterThan(RUNS / 3);
  }, 600_000);
});
