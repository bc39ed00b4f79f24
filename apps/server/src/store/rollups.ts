import type { Queryable } from './db.ts';

/**
 * The decay formula of packages/scoring in SQL at second $2, in double precision as the
 * JavaScript one computes it: with numeric operands PostgreSQL computes exp() in arbitrary
 * precision, about 25 times slower (0.5 s instead of 20 ms for 20,000 rows here). The exponent
 * is capped so that exp() cannot overflow.
 */
const LIVE_SCORE = `score::float8 / (1 + exp(least(700, (3 / score::float8) * (greatest($2::bigint - ts, 0)::float8 / 3600 - 2.5 * score::float8))))`;

/** Seconds in a rollup bucket. Buckets are aligned on the epoch, so on UTC hours and days. */
export const HOUR = 3600;
export const DAY = 86_400;

/** Counts one replica gathered since its last flush: added to what the store holds. */
export interface RollupCounts {
  reports: Array<{ orgId: number; hour: number; n: number }>;
  coins: Array<{ orgId: number; day: number; n: number }>;
}

/** Band bounds as an organization's settings give them: [min, max) except critical, [min, max]. */
export interface BandBounds {
  low: readonly [number, number];
  medium: readonly [number, number];
  high: readonly [number, number];
  critical: readonly [number, number];
}

export interface BandCounts {
  low: number;
  medium: number;
  high: number;
  critical: number;
}

export interface RollupSeries {
  /** Reports of the organization and of the whole alliance, per hour that has any. */
  reports: Array<{ hour: number; organization: number; alliance: number }>;
  agents: Array<{ hour: number; alive: number; active: number }>;
  coins: Array<{ day: number; coins: number }>;
  bands: Array<{ day: number; at: number } & BandCounts>;
}

/**
 * The console's figures over time (migration 0015). Every statement is one round trip whatever
 * the number of organizations or buckets; reads are bounded by the organization and a first
 * bucket, so by the primary keys.
 */
export class RollupStore {
  constructor(private readonly db: Queryable) {}

  /** Adds a replica's counts (one statement per table; rows sorted so concurrent flushes lock in one order). */
  async add(counts: RollupCounts): Promise<void> {
    const byKey = <T extends { orgId: number; n: number }>(rows: T[], key: (r: T) => number) =>
      [...rows].sort((a, b) => a.orgId - b.orgId || key(a) - key(b)).map((r) => ({ org_id: r.orgId, at: key(r), n: r.n }));
    if (counts.reports.length > 0) {
      await this.db.query(
        `insert into rollup_reports_hourly (org_id, hour, reports)
         select u.org_id, u.at, u.n from jsonb_to_recordset($1::jsonb) as u(org_id bigint, at bigint, n bigint)
         where exists (select 1 from organizations o where o.id = u.org_id)
         on conflict (org_id, hour) do update set reports = rollup_reports_hourly.reports + excluded.reports`,
        [JSON.stringify(byKey(counts.reports, (r) => r.hour))],
      );
    }
    if (counts.coins.length > 0) {
      await this.db.query(
        `insert into rollup_coins_daily (org_id, day, coins)
         select u.org_id, u.at, u.n from jsonb_to_recordset($1::jsonb) as u(org_id bigint, at bigint, n bigint)
         where exists (select 1 from organizations o where o.id = u.org_id)
         on conflict (org_id, day) do update set coins = rollup_coins_daily.coins + excluded.coins`,
        [JSON.stringify(byKey(counts.coins, (r) => r.day))],
      );
    }
  }

  /**
   * Samples the agents alive now, of every organization (or one): alive = active and checked in
   * within 2 x its sync_time minutes (services/agents/summary.ts isAlive). The hour keeps its
   * highest sample, so a replica sampling again, or late, never lowers it.
   */
  async sampleAgents(now: number, orgId: number | null = null): Promise<void> {
    await this.db.query(
      `insert into rollup_agents_hourly (org_id, hour, alive, active)
       select a.org_id, $1::bigint - $1::bigint % 3600,
              count(*) filter (where a.last_checkin_at is not null
                and extract(epoch from a.last_checkin_at) >= $1::bigint - 120 * coalesce((a.document->>'sync_time')::numeric, 0))::int,
              count(*)::int
       from agents a where a.deactivated_at is null and ($2::bigint is null or a.org_id = $2::bigint)
       group by a.org_id order by a.org_id
       on conflict (org_id, hour) do update set
         alive = greatest(rollup_agents_hourly.alive, excluded.alive),
         active = greatest(rollup_agents_hourly.active, excluded.active)`,
      [now, orgId],
    );
  }

  /** Organizations with their delay: whose bands the snapshot job counts. */
  async organizations(): Promise<Array<{ id: number; delay: string }>> {
    const res = await this.db.query<{ id: number; delay: string }>('select id, delay from organizations order by id');
    return res.rows.map((r) => ({ id: Number(r.id), delay: r.delay }));
  }

  /**
   * Counts the IPv4 indicators the organizations `orgIds` see now (`visibleUpTo`: their delay,
   * null = none) by live score in their bands, the first band that matches winning
   * (packages/scoring bandOf), and stores them as each one's snapshot of the day (a later
   * snapshot of the same day replaces it). One scan for all of them: organizations that share
   * bands and delay share the count.
   */
  async snapshotBands(orgIds: number[], now: number, visibleUpTo: number | null, bands: BandBounds): Promise<BandCounts> {
    const res = await this.db.query<BandCounts>(
      `with live as materialized (
         select ${LIVE_SCORE} as s from ipv4_indicators where $3::bigint is null or ts <= $3::bigint
       ), banded as (
         select case
           when s >= $4 and s < $5 then 'low'
           when s >= $6 and s < $7 then 'medium'
           when s >= $8 and s < $9 then 'high'
           when s >= $10 and s <= $11 then 'critical' end as band
         from live
       ), counts as (
         select count(*) filter (where band = 'low')::int as low, count(*) filter (where band = 'medium')::int as medium,
                count(*) filter (where band = 'high')::int as high, count(*) filter (where band = 'critical')::int as critical
         from banded
       )
       insert into rollup_bands_daily (org_id, day, low, medium, high, critical, at)
       select o.id, $2::bigint - $2::bigint % 86400, low, medium, high, critical, $2::bigint
       from counts cross join organizations o
       where o.id = any ($1::bigint[])
       order by o.id
       on conflict (org_id, day) do update set
         low = excluded.low, medium = excluded.medium, high = excluded.high, critical = excluded.critical, at = excluded.at
       where rollup_bands_daily.at <= excluded.at
       returning low, medium, high, critical`,
      [orgIds, now, visibleUpTo, ...bands.low, ...bands.medium, ...bands.high, ...bands.critical],
    );
    const row = res.rows[0];
    return { low: Number(row?.low ?? 0), medium: Number(row?.medium ?? 0), high: Number(row?.high ?? 0), critical: Number(row?.critical ?? 0) };
  }

  /** Whether the organization has a band snapshot of the day `now` falls in. */
  async hasBandSnapshot(orgId: number, now: number): Promise<boolean> {
    const res = await this.db.query('select 1 from rollup_bands_daily where org_id = $1 and day = $2::bigint - $2::bigint % 86400', [orgId, now]);
    return res.rows.length > 0;
  }

  /** Deletes every bucket that starts before `before` (epoch seconds). */
  async prune(before: number): Promise<number> {
    let n = 0;
    for (const sql of [
      'delete from rollup_reports_hourly where hour < $1',
      'delete from rollup_agents_hourly where hour < $1',
      'delete from rollup_coins_daily where day < $1',
      'delete from rollup_bands_daily where day < $1',
    ]) {
      n += (await this.db.query(sql, [before])).rowCount ?? 0;
    }
    return n;
  }

  /** The organization's stored buckets from `since` on (hours and days starting at or after it), oldest first. */
  async series(orgId: number, since: number): Promise<RollupSeries> {
    const [reports, agents, coins, bands] = await Promise.all([
      this.db.query<{ hour: number; organization: number; alliance: number }>(
        `select hour, coalesce(sum(reports) filter (where org_id = $1), 0)::bigint as organization, sum(reports)::bigint as alliance
         from rollup_reports_hourly where hour >= $2 group by hour order by hour`,
        [orgId, since],
      ),
      this.db.query<{ hour: number; alive: number; active: number }>('select hour, alive, active from rollup_agents_hourly where org_id = $1 and hour >= $2 order by hour', [orgId, since]),
      this.db.query<{ day: number; coins: number }>('select day, coins from rollup_coins_daily where org_id = $1 and day >= $2 order by day', [orgId, since - (since % DAY)]),
      this.db.query<{ day: number; at: number } & BandCounts>(
        'select day, at, low, medium, high, critical from rollup_bands_daily where org_id = $1 and day >= $2 order by day',
        [orgId, since - (since % DAY)],
      ),
    ]);
    const n = (v: unknown) => Number(v);
    return {
      reports: reports.rows.map((r) => ({ hour: n(r.hour), organization: n(r.organization), alliance: n(r.alliance) })),
      agents: agents.rows.map((r) => ({ hour: n(r.hour), alive: n(r.alive), active: n(r.active) })),
      coins: coins.rows.map((r) => ({ day: n(r.day), coins: n(r.coins) })),
      bands: bands.rows.map((r) => ({ day: n(r.day), at: n(r.at), low: n(r.low), medium: n(r.medium), high: n(r.high), critical: n(r.critical) })),
    };
  }

  /**
   * The alliance's activity since `since` (a UTC day's first second), per organization and day:
   * reports from the rollups; IPv4 indicators new to the alliance (entry_ts in the window) per
   * reporting organization (its report first made in the window); and the top sources, ASNs and
   * countries of the new indicators (ip_info as stored at entry). An indicator's `ts` never falls
   * below its `entry_ts`, so `ts >= since` bounds the scan by the feed index.
   */
  async activity(since: number, top: number): Promise<AllianceActivity> {
    const n = (v: unknown) => Number(v);
    const reports = await this.db.query<{ org_id: number; day: number; n: number }>(
      `select org_id, hour - hour % 86400 as day, sum(reports)::bigint as n from rollup_reports_hourly
       where hour >= $1::bigint group by org_id, day order by org_id, day`,
      [since],
    );
    const fresh = `select id, sources, ip_info from ipv4_indicators where ts >= $1::bigint and entry_ts >= $1::bigint`;
    const perOrg = await this.db.query<{ org_id: number; day: number; n: number }>(
      `select r.org_id, r.first_ts - r.first_ts % 86400 as day, count(*)::bigint as n
       from (${fresh}) i join ipv4_reports r on r.indicator_id = i.id
       where r.first_ts >= $1::bigint group by r.org_id, day order by r.org_id, day`,
      [since],
    );
    const tops = await this.db.query<{ kind: string; value: string; n: number }>(
      `with fresh as materialized (${fresh}),
       ranked as (
         select 'total' as kind, '' as value, count(*)::bigint as n from fresh
         union all (select 'source', s, count(*)::bigint from fresh, unnest(sources) s group by s order by 3 desc, 2 limit $2)
         union all (select 'asn', ip_info->>'asn', count(*)::bigint from fresh where coalesce(ip_info->>'asn', '') <> '' group by 2 order by 3 desc, 2 limit $2)
         union all (select 'country', ip_info->>'country', count(*)::bigint from fresh where coalesce(ip_info->>'country', '') <> '' group by 2 order by 3 desc, 2 limit $2)
       ) select kind, value, n from ranked`,
      [since, top],
    );
    const ids = [...new Set([...reports.rows, ...perOrg.rows].map((r) => n(r.org_id)))];
    const orgs = await this.db.query<{ id: number; gid: string; name: string }>('select id, gid, name from organizations where id = any($1::bigint[]) order by id', [ids]);
    const pick = (kind: string) => tops.rows.filter((r) => r.kind === kind).map((r) => ({ value: r.value, indicators: n(r.n) }));
    return {
      organizations: orgs.rows.map((o) => ({ id: n(o.id), gid: o.gid, name: o.name })),
      reports: reports.rows.map((r) => ({ orgId: n(r.org_id), day: n(r.day), n: n(r.n) })),
      newIndicators: perOrg.rows.map((r) => ({ orgId: n(r.org_id), day: n(r.day), n: n(r.n) })),
      total: n(tops.rows.find((r) => r.kind === 'total')?.n ?? 0),
      sources: pick('source'),
      asns: pick('asn'),
      countries: pick('country'),
    };
  }
}

export interface AllianceActivity {
  /** The organizations with reports or new indicators in the window, by id. */
  organizations: Array<{ id: number; gid: string; name: string }>;
  reports: Array<{ orgId: number; day: number; n: number }>;
  newIndicators: Array<{ orgId: number; day: number; n: number }>;
  total: number;
  sources: Array<{ value: string; indicators: number }>;
  asns: Array<{ value: string; indicators: number }>;
  countries: Array<{ value: string; indicators: number }>;
}
