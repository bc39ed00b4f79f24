// Crime score, algorithm v3.2 (spec section 9; design in ../README.md).
//
// Invariants the tests hold this file to:
// - s0 is an integer in 1..1000;
// - s0 never decreases when an organization's trust, confidence, severity or events rise, nor
//   when an organization is added;
// - one organization alone never exceeds V32_SINGLE_ORG_CEILING, however many events it sends;
// - the order of the aggregates does not matter (weights are summed as exact integers).

export const V32_VERSION = '3.2';

/** Tunables of v3.2. Changing any of them is a new algorithm version. */
export const V32_PARAMS = Object.freeze({
  /** Weight sum at which the score reaches 1 - 1/e (632) of the maximum. */
  scale: 7,
  /** Repeat bonus per doubling of one organization's events. */
  repeatStep: 0.125,
  /** Most that repeats can add, as a fraction of the organization's base weight. */
  repeatCap: 0.5,
  /** Weight factor at severity 0; severity 1, or severity absent, gives factor 1. */
  severityFloor: 0.5,
  max: 1000,
  min: 1,
});

/** What one distinct reporting organization has said about one indicator. */
export interface OrgAggregate {
  /** Trust the alliance places in the organization, 0..1. */
  readonly orgTrust: number;
  /** The organization's latest confidence for this indicator, 0..1. */
  readonly confidence: number;
  /** Reports merged from this organization, integer >= 1. */
  readonly events: number;
  /** 0..1; absent means no severity was given and the organization's weight is not reduced. */
  readonly severity?: number;
}

/** Named numbers that explain a score; a look-up may return them as they are. */
export interface ScoreComponents {
  /** Distinct reporting organizations. */
  readonly organizations: number;
  /** Reports merged across all organizations. */
  readonly events: number;
  /** Sum over organizations of trust × confidence × severity factor (6 decimals). */
  readonly baseWeight: number;
  /** Sum of what repeated events added on top of the base weight (6 decimals). */
  readonly repeatWeight: number;
  /** baseWeight + repeatWeight. */
  readonly weight: number;
  /** 1 - exp(-weight / scale), in [0, 1). */
  readonly saturation: number;
  /** 1000 × saturation, before rounding and clamping to 1..1000. */
  readonly raw: number;
}

export interface ScoreResult {
  readonly s0: number;
  readonly components: ScoreComponents;
}

const MICRO = 1e6;

/**
 * Score at time zero from one aggregate per distinct reporting organization:
 *   base_i = trust_i × confidence_i × (0.5 + 0.5 × severity_i)   (severity absent: factor 1)
 *   w_i    = base_i × (1 + min(0.125 × log2(events_i), 0.5))
 *   s0     = clamp(round(1000 × (1 - exp(-Σ w_i / 7))), 1, 1000)
 * Inputs out of range are clamped (trust, confidence, severity to 0..1; events below 1 to 1), so
 * the bounds hold for any input. No aggregates gives the minimum, 1.
 */
export function scoreV32(aggregates: readonly OrgAggregate[]): ScoreResult {
  let baseMicros = 0;
  let repeatMicros = 0;
  let events = 0;
  for (const aggregate of aggregates) {
    const base = baseOf(aggregate);
    const count = eventsOf(aggregate);
    // Rounding each term to an integer number of millionths keeps the sum exact, hence
    // independent of order, and Math.round keeps every term monotone in its inputs.
    baseMicros += Math.round(base * MICRO);
    repeatMicros += Math.round(base * repeatFactor(count) * MICRO);
    events += count;
  }
  const { weight, saturation, raw, s0 } = fromMicros(baseMicros + repeatMicros);
  return {
    s0,
    components: {
      organizations: aggregates.length,
      events,
      baseWeight: baseMicros / MICRO,
      repeatWeight: repeatMicros / MICRO,
      weight,
      saturation,
      raw,
    },
  };
}

/** The weight (in millionths, the exact integer sum scoreV32 forms) to s0: the step the SQL tables below are made from. */
function fromMicros(micros: number): { weight: number; saturation: number; raw: number; s0: number } {
  const weight = micros / MICRO;
  const saturation = 1 - Math.exp(-weight / V32_PARAMS.scale);
  const raw = V32_PARAMS.max * saturation;
  return { weight, saturation, raw, s0: Math.min(V32_PARAMS.max, Math.max(V32_PARAMS.min, Math.round(raw))) };
}

/**
 * What scoreV32 computes, as tables a database can apply without its own exp and log (whose last
 * bit may differ from JavaScript's), so a score computed in SQL is the one scoreV32 gives:
 * - `repeatFactors[n]` for n = 0..16: the repeat factor of n events (index 0 as 1 event); from 16
 *   events on it is the cap, `repeatFactors[16]`;
 * - `thresholds[s - 2]` for s = 2..1000: the least weight, in millionths, whose s0 is s or more,
 *   so s0 = 1 + (how many thresholds are <= the weight in millionths).
 * Each term is then rounded as scoreV32 rounds it (Math.round of base × 1e6 and of
 * base × factor × 1e6, base = trust × confidence, both clamped to 0..1, severity absent).
 */
export interface ScoreV32Tables {
  readonly repeatFactors: readonly number[];
  readonly thresholds: readonly number[];
}

let tables: ScoreV32Tables | undefined;

export function scoreV32Tables(): ScoreV32Tables {
  if (tables) return tables;
  const repeatFactors = Array.from({ length: 17 }, (_, n) => repeatFactor(n >= 1 ? n : 1));
  const thresholds: number[] = [];
  // s0 never decreases as the weight grows (checked over every millionth up to the maximum when
  // the tables were made; score-v32.test.ts compares them with scoreV32): the least weight of
  // each score by bisection.
  for (let s = V32_PARAMS.min + 1; s <= V32_PARAMS.max; s += 1) {
    let lo = thresholds.at(-1) ?? 0;
    let hi = 2 ** 40;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (fromMicros(mid).s0 >= s) hi = mid;
      else lo = mid + 1;
    }
    thresholds.push(lo);
  }
  tables = Object.freeze({ repeatFactors: Object.freeze(repeatFactors), thresholds: Object.freeze(thresholds) });
  return tables;
}

/** The largest s0 one organization can produce: trust 1, confidence 1, unbounded events. */
export const V32_SINGLE_ORG_CEILING: number = scoreV32([
  { orgTrust: 1, confidence: 1, events: Number.MAX_VALUE },
]).s0;

function baseOf({ orgTrust, confidence, severity }: OrgAggregate): number {
  const severityFactor =
    severity === undefined
      ? 1
      : V32_PARAMS.severityFloor + (1 - V32_PARAMS.severityFloor) * unit(severity);
  return unit(orgTrust) * unit(confidence) * severityFactor;
}

/** Logarithmic in events and capped: repeats by one organization add little. */
function repeatFactor(events: number): number {
  return Math.min(V32_PARAMS.repeatStep * Math.log2(events), V32_PARAMS.repeatCap);
}

function eventsOf({ events }: OrgAggregate): number {
  return events >= 1 ? events : 1;
}

/** Clamp to 0..1; NaN counts as 0. */
function unit(value: number): number {
  return value > 0 ? (value < 1 ? value : 1) : 0;
}

/**
 * The decay clock (the record's `ts`) after a report. It moves to the report's time when the
 * indicator is new, when the reporting organization had not reported it before, or when the
 * report changed the score (`scores`): a record whose score changed is delivered again, and its
 * `(ts, score)` pair is the anchor every consumer computes the live score from (decisions.md).
 * One organization repeating itself moves it only while its repeats still raise the score, which
 * stops at the single-organization ceiling, so repeats alone cannot keep an indicator fresh
 * forever. It never moves backwards: a late report keeps the later anchor, which also keeps
 * `ts`-paging clients consistent. previousAnchorTs null means the indicator is new.
 */
export function anchorTs(
  previousAnchorTs: number | null,
  previousReporterOrgs: ReadonlySet<string> | readonly string[],
  reportOrgId: string,
  reportTs: number,
  scores?: { before: number; after: number },
): number {
  if (previousAnchorTs === null) return reportTs;
  if (hasOrg(previousReporterOrgs, reportOrgId) && (!scores || scores.before === scores.after)) return previousAnchorTs;
  return Math.max(previousAnchorTs, reportTs);
}

function hasOrg(orgs: ReadonlySet<string> | readonly string[], orgId: string): boolean {
  return isArray(orgs) ? orgs.includes(orgId) : orgs.has(orgId);
}

// Array.isArray narrows to any[]; this guard keeps the readonly element type.
function isArray(orgs: ReadonlySet<string> | readonly string[]): orgs is readonly string[] {
  return Array.isArray(orgs);
}
