import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bandOf } from './bands.ts';
import type { BandName } from './bands.ts';
import { anchorTs, scoreV32, scoreV32Tables, V32_SINGLE_ORG_CEILING } from './score-v32.ts';
import type { OrgAggregate } from './score-v32.ts';

const unit = fc.double({ min: 0, max: 1, noNaN: true });
const events = fc.integer({ min: 1, max: 1_000_000 });
const aggregate: fc.Arbitrary<OrgAggregate> = fc.record({
  orgTrust: unit,
  confidence: unit,
  events,
  severity: fc.option(unit, { nil: undefined }),
});
const aggregates = fc.array(aggregate, { maxLength: 30 });
/** A list with one position in it, to vary one organization. */
const listWithIndex = fc
  .array(aggregate, { minLength: 1, maxLength: 30 })
  .chain((list) => fc.tuple(fc.constant(list), fc.nat({ max: list.length - 1 })));
const ordered = fc.tuple(unit, unit).map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const);

const s0 = (list: readonly OrgAggregate[]): number => scoreV32(list).s0;
function replaced(list: readonly OrgAggregate[], i: number, patch: Partial<OrgAggregate>) {
  return list.map((entry, j) => (j === i ? { ...entry, ...patch } : entry));
}

describe('scoreV32 worked example (README)', () => {
  it('reproduces every figure of the README', () => {
    const result = scoreV32([
      { orgTrust: 0.9, confidence: 0.8, events: 5 },
      { orgTrust: 0.6, confidence: 1, events: 1, severity: 0.5 },
      { orgTrust: 0.3, confidence: 0.5, events: 40 },
    ]);
    expect(result.s0).toBe(205);
    expect(result.components).toMatchObject({
      organizations: 3,
      events: 46,
      baseWeight: 1.32,
      repeatWeight: 0.283974,
      weight: 1.603974,
    });
    expect(result.components.saturation).toBeCloseTo(0.204782, 6);
    expect(result.components.raw).toBeCloseTo(204.782, 3);
  });

  const single = (orgTrust: number, confidence: number, count: number): OrgAggregate => ({
    orgTrust,
    confidence,
    events: count,
  });
  const table: Array<[list: OrgAggregate[], expected: number, band: BandName]> = [
    [[single(0.5, 0.5, 1)], 35, 'LOW'],
    [[single(0.8, 0.9, 1)], 98, 'MEDIUM'],
    [[single(1, 1, 1)], 133, 'HIGH'],
    [[single(1, 1, 16)], 193, 'CRITICAL'],
    [Array<OrgAggregate>(3).fill(single(0.8, 0.9, 1)), 266, 'CRITICAL'],
    [Array<OrgAggregate>(10).fill(single(1, 1, 1)), 760, 'CRITICAL'],
  ];

  it.each(table)('README table: %j scores %d (%s)', (list, expected, band) => {
    expect(s0(list)).toBe(expected);
    expect(bandOf(expected)).toBe(band);
  });
});

describe('scoreV32 properties', () => {
  it('is always an integer in 1..1000, whatever the input', () => {
    const anyNumber = fc.double();
    const wild = fc.array(
      fc.record({
        orgTrust: anyNumber,
        confidence: anyNumber,
        events: anyNumber,
        severity: fc.option(anyNumber, { nil: undefined }),
      }),
      { maxLength: 200 },
    );
    fc.assert(
      fc.property(wild, (list) => {
        const score = s0(list);
        expect(Number.isInteger(score)).toBe(true);
        expect(score).toBeGreaterThanOrEqual(1);
        expect(score).toBeLessThanOrEqual(1000);
      }),
    );
  });

  it('is 1 with no reports and reaches 1000 with enough independent organizations', () => {
    expect(s0([])).toBe(1);
    expect(s0(Array(60).fill({ orgTrust: 1, confidence: 1, events: 1 }))).toBe(1000);
  });

  it('is monotone in trust', () => {
    fc.assert(
      fc.property(listWithIndex, ordered, ([list, i], [lo, hi]) => {
        expect(s0(replaced(list, i, { orgTrust: lo }))).toBeLessThanOrEqual(
          s0(replaced(list, i, { orgTrust: hi })),
        );
      }),
    );
  });

  it('is monotone in confidence', () => {
    fc.assert(
      fc.property(listWithIndex, ordered, ([list, i], [lo, hi]) => {
        expect(s0(replaced(list, i, { confidence: lo }))).toBeLessThanOrEqual(
          s0(replaced(list, i, { confidence: hi })),
        );
      }),
    );
  });

  it('is monotone in severity, absent severity counting as the highest', () => {
    fc.assert(
      fc.property(listWithIndex, ordered, ([list, i], [lo, hi]) => {
        const low = s0(replaced(list, i, { severity: lo }));
        expect(low).toBeLessThanOrEqual(s0(replaced(list, i, { severity: hi })));
        expect(s0(replaced(list, i, { severity: hi }))).toBeLessThanOrEqual(
          s0(replaced(list, i, { severity: undefined })),
        );
      }),
    );
  });

  it('is monotone in events', () => {
    fc.assert(
      fc.property(listWithIndex, events, events, ([list, i], a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        expect(s0(replaced(list, i, { events: lo }))).toBeLessThanOrEqual(
          s0(replaced(list, i, { events: hi })),
        );
      }),
    );
  });

  it('never decreases when an organization is added, wherever it lands in the list', () => {
    fc.assert(
      fc.property(aggregates, aggregate, fc.nat(), (list, extra, at) => {
        const i = list.length === 0 ? 0 : at % (list.length + 1);
        const more = [...list.slice(0, i), extra, ...list.slice(i)];
        expect(s0(list)).toBeLessThanOrEqual(s0(more));
      }),
    );
  });

  it('does not depend on the order of the organizations', () => {
    fc.assert(
      fc.property(aggregates, (list) => {
        expect(scoreV32([...list].reverse())).toEqual(scoreV32(list));
      }),
    );
  });

  it('keeps one organization at or below the ceiling of 193, however many events', () => {
    expect(V32_SINGLE_ORG_CEILING).toBe(193);
    expect(s0([{ orgTrust: 1, confidence: 1, events: Number.MAX_SAFE_INTEGER }])).toBe(193);
    fc.assert(
      fc.property(aggregate, fc.double({ min: 1, noNaN: true }), (org, manyEvents) => {
        expect(s0([org])).toBeLessThanOrEqual(V32_SINGLE_ORG_CEILING);
        expect(s0([{ ...org, events: manyEvents }])).toBeLessThanOrEqual(V32_SINGLE_ORG_CEILING);
      }),
    );
  });

  it('values a second organization more than any number of repeats by the first', () => {
    const one = { orgTrust: 1, confidence: 1, events: 1 };
    expect(s0([{ ...one, events: 1_000_000 }])).toBeLessThan(s0([one, one]));
  });
});

describe('anchorTs', () => {
  const orgId = fc.constantFrom('RMP-GID-a', 'RMP-GID-b', 'RMP-GID-c', 'RMP-GID-d');
  const ts = fc.integer({ min: 0, max: 2_000_000_000 });
  const reporters = fc.uniqueArray(orgId, { maxLength: 4 });

  it('anchors a new indicator at its first report', () => {
    fc.assert(
      fc.property(orgId, ts, (org, reportTs) => {
        expect(anchorTs(null, [], org, reportTs)).toBe(reportTs);
      }),
    );
  });

  it('keeps the anchor when the same organization reports again', () => {
    fc.assert(
      fc.property(reporters, ts, ts, (orgs, previous, reportTs) => {
        fc.pre(orgs.length > 0);
        const repeater = orgs[0]!;
        expect(anchorTs(previous, orgs, repeater, reportTs)).toBe(previous);
        expect(anchorTs(previous, new Set(orgs), repeater, reportTs)).toBe(previous);
      }),
    );
  });

  it('re-anchors on a report by a new organization, never moving backwards', () => {
    fc.assert(
      fc.property(reporters, orgId, ts, ts, (orgs, org, previous, reportTs) => {
        fc.pre(!orgs.includes(org));
        const next = anchorTs(previous, new Set(orgs), org, reportTs);
        expect(next).toBe(Math.max(previous, reportTs));
        expect(anchorTs(previous, orgs, org, reportTs)).toBe(next);
      }),
    );
    expect(anchorTs(1000, ['RMP-GID-a'], 'RMP-GID-b', 5000)).toBe(5000);
    expect(anchorTs(1000, ['RMP-GID-a'], 'RMP-GID-a', 5000)).toBe(1000);
  });
});

describe('scoreV32Tables (the score as SQL applies it)', () => {
  /** What the tables give, term for term as the SQL of apps/server/src/store/ipv4-ingest-one.ts computes it. */
  function fromTables(aggregates: readonly OrgAggregate[]): number {
    const { repeatFactors, thresholds } = scoreV32Tables();
    const clamp = (x: number) => (x > 0 ? Math.min(x, 1) : 0);
    const jsRound = (x: number) => Math.floor(x) + (x - Math.floor(x) >= 0.5 ? 1 : 0);
    let micros = 0;
    for (const a of aggregates) {
      const base = clamp(a.orgTrust) * clamp(a.confidence);
      micros += jsRound(base * 1e6) + jsRound(base * repeatFactors[Math.min(Math.max(a.events, 1), 16)]! * 1e6);
    }
    return 1 + thresholds.filter((t) => t <= micros).length;
  }

  it('gives the s0 of scoreV32 for any reporters without severity', () => {
    const plain = fc.record({ orgTrust: unit, confidence: unit, events });
    fc.assert(
      fc.property(fc.array(plain, { minLength: 1, maxLength: 40 }), (aggregates) => {
        expect(fromTables(aggregates)).toBe(scoreV32(aggregates).s0);
      }),
      { numRuns: 2000 },
    );
  });

  it('has one threshold per score from 2 to 1000, rising', () => {
    const { thresholds, repeatFactors } = scoreV32Tables();
    expect(thresholds).toHaveLength(999);
    for (let i = 1; i < thresholds.length; i += 1) expect(thresholds[i]!).toBeGreaterThan(thresholds[i - 1]!);
    expect(repeatFactors).toHaveLength(17);
    expect(repeatFactors[16]).toBe(0.5);
  });
});
