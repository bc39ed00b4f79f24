import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isBlocked, liveScore, type BlockReason } from '@rampart/scoring';
import { liveCutoffs } from '../src/services/ipv4/policy.ts';
import type { Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg } from './support/app.ts';

/*
 * One blocking rule for domains (and, through the same SQL, URLs and file digests): the score
 * lists' SQL (`scoreListSql` in store/indicator-sql.ts, with its per-s0 cutoff table from
 * `liveCutoffs`) against `isBlocked` (packages/scoring, the rule as written, which the agent's
 * block state also calls). Over random records (scores, ages, the listing organization's anchors
 * and another's), decisions (whitelist, blacklist, cleared; on held values and on values nobody
 * reported; the listing organization's and another's), thresholds, delays and instants, the list
 * must hold exactly what the rule blocks.
 */

const RUNS = Number(process.env.BLOCKING_RULE_RUNS ?? 100);
const SEED = Number(process.env.BLOCKING_RULE_SEED ?? 20261129);

/** When the seed dates a decision's last change (its record's ts, migration 0018). */
const DECIDED_AGO = 7_200;

const VALUES = Array.from({ length: 30 }, (_, i) => `host${i}.example.net`);

interface Indicator {
  value: string;
  score: number;
  age: number;
  anchor: { after: number; score: number } | null;
  foreignAnchor: boolean;
}

interface Decision {
  value: string;
  decision: -1 | 0 | 1;
  foreign: boolean;
}

interface Scenario {
  now: number;
  indicators: Indicator[];
  decisions: Decision[];
  threshold: number;
  delay: number;
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  now: fc.tuple(fc.constantFrom(1_764_000_000, 2_200_000_000), fc.integer({ min: 0, max: 86_399 })).map(([day, s]) => day + s),
  indicators: fc.uniqueArray(
    fc.record({
      value: fc.constantFrom(...VALUES.slice(0, 20)),
      score: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.constantFrom(1, 100, 1000)),
      age: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 40 * 86_400 }) }, { weight: 1, arbitrary: fc.constantFrom(0, 1, 3_600, 9_000) }),
      anchor: fc.option(fc.record({ after: fc.integer({ min: -3_600, max: 20 * 86_400 }), score: fc.integer({ min: 1, max: 1000 }) }), { freq: 3 }),
      foreignAnchor: fc.boolean(),
    }),
    { maxLength: 20, selector: (i) => i.value },
  ),
  // Values 20..29 are never reported: a decision there is on a value nobody reported.
  decisions: fc.uniqueArray(fc.record({ value: fc.constantFrom(...VALUES), decision: fc.constantFrom(-1 as const, 0 as const, 1 as const), foreign: fc.boolean() }), {
    maxLength: 12,
    selector: (d) => `${d.foreign}:${d.value}`,
  }),
  threshold: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.double({ min: 0.01, max: 1000.99, noNaN: true })),
  delay: fc.constantFrom(0, 0, 3_600, 86_400),
});

type Tally = Record<BlockReason | 'delayed' | 'unreported', number>;

/** The reference: each held record through `isBlocked`, then the blacklists on values nobody reported. */
function expected(s: Scenario, tally: Tally): string[] {
  const own = new Map(s.decisions.filter((d) => !d.foreign).map((d) => [d.value, d.decision]));
  const listed: string[] = [];
  for (const i of s.indicators) {
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
    const verdict = isBlocked({ reserved: false, decision: own.get(i.value) ?? -1, ttl: null, now: s.now, liveScore: liveScore(score, s.now - ts), threshold: s.threshold, blockingRule: null, tags: [] });
    tally[verdict.reason]++;
    if (verdict.blocked) listed.push(i.value);
  }
  const held = new Set(s.indicators.map((i) => i.value));
  for (const [value, decision] of own) {
    if (held.has(value) || decision !== 1) continue;
    if (s.delay > 0 && s.now - DECIDED_AGO > s.now - s.delay) {
      tally.delayed++;
      continue;
    }
    tally.unreported++;
    listed.push(value);
  }
  return listed.sort();
}

describe.each(driverCases())('one blocking rule for domains: isBlocked and the score lists agree, on $name', (driver) => {
  let store: Store;
  let orgId: number;
  let otherId: number;

  beforeAll(async () => {
    store = await driver.open();
    orgId = (await seedOrg(store)).org.id;
    otherId = (await seedOrg(store)).org.id;
  }, 60_000);
  afterAll(async () => {
    await store.close();
  });

  async function seed(s: Scenario): Promise<void> {
    const db = sqlOf(store);
    await db.query('delete from domain_decisions');
    await db.query('delete from domain_indicators');
    const ids = new Map<string, number>();
    if (s.indicators.length > 0) {
      const res = await db.query<{ id: number; value: string }>(
        'insert into domain_indicators (value, score, ts, entry_ts) select v, sc, t, t from unnest($1::text[], $2::integer[], $3::bigint[]) as x(v, sc, t) returning id, value',
        [s.indicators.map((i) => i.value), s.indicators.map((i) => i.score), s.indicators.map((i) => s.now - i.age)],
      );
      for (const r of res.rows) ids.set(r.value, Number(r.id));
    }
    for (const i of s.indicators) {
      const id = ids.get(i.value)!;
      if (i.anchor) await db.query('insert into domain_org_anchors (org_id, indicator_id, ts, score) values ($1, $2, $3, $4)', [orgId, id, s.now - i.age + i.anchor.after, i.anchor.score]);
      if (i.foreignAnchor) await db.query('insert into domain_org_anchors (org_id, indicator_id, ts, score) values ($1, $2, $3, 1000)', [otherId, id, s.now - i.age + 86_400]);
    }
    for (const d of s.decisions) {
      await db.query('insert into domain_decisions (org_id, value, decision, ts) values ($1, $2, $3, $4)', [d.foreign ? otherId : orgId, d.value, d.decision, s.now - DECIDED_AGO]);
    }
  }

  it(`lists what isBlocked blocks over ${RUNS} random scenarios`, async () => {
    const tally: Tally = { reserved: 0, whitelist: 0, blacklist: 0, score: 0, blocking_rule: 0, below_threshold: 0, delayed: 0, unreported: 0 };
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        await seed(s);
        const filter = { orgId, cutoffs: liveCutoffs(s.threshold, s.now), visibleUpTo: s.delay > 0 ? s.now - s.delay : null };
        const rows = await store.domains.listRows(filter, null, null, 10_000);
        expect(rows.map((r) => r.value).sort()).toEqual(expected(s, tally));
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    // Every branch the domain lists can take decided some record (no reserved ranges nor rules here).
    for (const reason of ['whitelist', 'blacklist', 'score', 'below_threshold', 'delayed', 'unreported'] as const) expect(tally[reason], reason).toBeGreaterThan(0);
  }, 600_000);
});
