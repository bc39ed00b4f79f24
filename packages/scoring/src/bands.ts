// Severity bands of the organization configuration (`live.*_score`, spec section 2.12).

/** [min, max] of one band, as written in the organization configuration. */
export type BandRange = readonly [min: number, max: number];

/** The four `live` band keys of the organization configuration. */
export interface Bands {
  readonly low_score: BandRange;
  readonly medium_score: BandRange;
  readonly high_score: BandRange;
  readonly critical_score: BandRange;
}

export type BandName = 'LOW' | 'MEDIUM' | 'HIGH' | 'CRITICAL';

/** Defaults of spec section 2.12. */
export const DEFAULT_BANDS: Bands = Object.freeze({
  low_score: [1, 60],
  medium_score: [60, 120],
  high_score: [120, 150],
  critical_score: [150, 1000],
} as const);

/**
 * Band of a score: min inclusive, max exclusive, except CRITICAL (the last band), whose max is
 * inclusive so that 1000 is CRITICAL under the defaults. Bands are tried from LOW to CRITICAL and
 * the first match wins, so an administrator's overlapping ranges resolve to the lower band.
 * null when the score falls in no band (below LOW, above CRITICAL, in a gap, or NaN).
 */
export function bandOf(score: number, bands: Bands = DEFAULT_BANDS): BandName | null {
  if (inHalfOpen(score, bands.low_score)) return 'LOW';
  if (inHalfOpen(score, bands.medium_score)) return 'MEDIUM';
  if (inHalfOpen(score, bands.high_score)) return 'HIGH';
  const [min, max] = bands.critical_score;
  if (score >= min && score <= max) return 'CRITICAL';
  return null;
}

function inHalfOpen(score: number, [min, max]: BandRange): boolean {
  return score >= min && score < max;
}
