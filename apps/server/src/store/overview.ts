import type { Queryable } from './db.ts';

/**
 * Aggregates for the console's overview. The live score is the decay formula of
 * packages/scoring evaluated in SQL in double precision, as JavaScript does (with numeric
 * operands PostgreSQL computes exp() in arbitrary precision: 3.2-3.5 s for 100,000 indicators
 * instead of a few hundred ms), exponent capped so exp() cannot overflow; the
 * histogram is at most 1001 rows however many indicators there are.
 */
export class OverviewStore {
  constructor(private readonly db: Queryable) {}

  /** `visibleUpTo`: the organization's delay (records with a later ts are not counted); null = none. */
  async ipv4Histogram(now: number, visibleUpTo: number | null = null): Promise<number[]> {
    const res = await this.db.query<{ s: number; n: number }>(
      `select least(1000, floor(score::float8 / (1 + exp(least(700, (3 / score::float8) * (greatest($1::bigint - ts, 0)::float8 / 3600 - 2.5 * score::float8))))))::int as s,
              count(*)::int as n
       from ipv4_indicators where $2::bigint is null or ts <= $2::bigint group by 1`,
      [now, visibleUpTo],
    );
    const histogram = new Array<number>(1001).fill(0);
    for (const row of res.rows) histogram[Math.max(0, Math.min(1000, Number(row.s)))]! += Number(row.n);
    return histogram;
  }

  async reportsSince(orgId: number, since: number): Promise<number> {
    const res = await this.db.query<{ n: number }>('select count(*)::int as n from ipv4_reports where org_id = $1 and last_ts >= $2', [orgId, since]);
    return Number(res.rows[0]?.n ?? 0);
  }
}
