import type { FastifyBaseLogger } from 'fastify';
import type { OverviewHistoryResponse } from '@rampart/contracts';
import type { Organization, Store } from '../../store/index.ts';
import { DAY, HOUR, type BandBounds, type RollupCounts } from '../../store/rollups.ts';
import { visibleUpTo } from '../envelope.ts';

/** Buckets older than this are deleted: the 30 days the console shows plus the partial current one. */
export const ROLLUP_RETENTION_DAYS = 31;
/** How often a replica writes its counts and samples its organizations' agents. */
export const ROLLUP_TICK_MS = 60_000;
/** Every how many ticks the band snapshots are taken and old buckets pruned (15 minutes). */
const SNAPSHOT_EVERY_TICKS = 15;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * The console's figures over time, kept as they happen (issue 23 item 3).
 *
 * Reports and coins are counted in this replica's memory where they happen (a report stored, a
 * charge kept) and added to the store once a minute, at shutdown, and before this replica
 * answers `/overview/history` (so what one replica shows is exact, like its coin leases). A
 * flush that fails keeps its counts for the next one; a replica that crashes loses at most a
 * minute of them. Agents alive are sampled each minute; band snapshots and pruning run every
 * 15 minutes. Every replica runs the job: samples are idempotent (see migration 0015), counts
 * additive, so any number of replicas write the right figures.
 */
export class Rollups {
  private reports = new Map<string, number>();
  private coins = new Map<string, number>();
  /** The key of each organization's current bucket (KeyMemo), for reports and for coins. */
  private readonly reportKeys: KeyMemo = new Map();
  private readonly coinKeys: KeyMemo = new Map();
  private timer: ReturnType<typeof setInterval> | null = null;
  private ticks = 0;
  /** The job's work in progress: a tick never overlaps another, nor a flush at close. */
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly log: Pick<FastifyBaseLogger, 'warn'>,
  ) {}

  /** `n` reports of the organization stored at `at` (epoch seconds). */
  countReports(orgId: number, n = 1, at = nowSeconds()): void {
    if (n > 0) bump(this.reports, this.reportKeys, orgId, at - (at % HOUR), n);
  }

  /** `n` coins the organization was charged at `at` (a charge refunded is not counted). */
  countCoins(orgId: number, n: number, at = nowSeconds()): void {
    if (n > 0) bump(this.coins, this.coinKeys, orgId, at - (at % DAY), n);
  }

  /** Adds the counts gathered so far to the store; on failure they are kept for the next flush. */
  async flush(): Promise<void> {
    if (this.reports.size === 0 && this.coins.size === 0) return;
    const reports = this.reports;
    const coins = this.coins;
    this.reports = new Map();
    this.coins = new Map();
    const counts: RollupCounts = {
      reports: [...reports].map(([key, n]) => ({ ...unkey(key), n })).map(({ orgId, at, n }) => ({ orgId, hour: at, n })),
      coins: [...coins].map(([key, n]) => ({ ...unkey(key), n })).map(({ orgId, at, n }) => ({ orgId, day: at, n })),
    };
    try {
      await this.store.rollups.add(counts);
    } catch (err) {
      for (const [key, n] of reports) this.reports.set(key, (this.reports.get(key) ?? 0) + n);
      for (const [key, n] of coins) this.coins.set(key, (this.coins.get(key) ?? 0) + n);
      throw err;
    }
  }

  /**
   * Today's band snapshot of every organization (each in its own bands, its delay applied). The
   * organizations that share bands and delay (most keep the defaults) share one scan of the
   * indicators: one per organization made the job cost organizations × indicators.
   */
  async snapshotBands(now = nowSeconds(), only: Organization | null = null): Promise<void> {
    const orgs = only ? [{ id: only.id, delay: only.delay }] : await this.store.rollups.organizations();
    const groups = new Map<string, { ids: number[]; upTo: number | null; bands: BandBounds }>();
    for (const org of orgs) {
      const { document } = await this.store.settings.organizationCached(org.id);
      const { low_score, medium_score, high_score, critical_score } = document.live;
      const bands = { low: low_score, medium: medium_score, high: high_score, critical: critical_score } as BandBounds;
      const upTo = visibleUpTo(org as Organization, now);
      const key = JSON.stringify([upTo, bands]);
      const group = groups.get(key);
      if (group) group.ids.push(org.id);
      else groups.set(key, { ids: [org.id], upTo, bands });
    }
    for (const { ids, upTo, bands } of groups.values()) await this.store.rollups.snapshotBands(ids, now, upTo, bands);
  }

  /** One run of the job: flush, sample agents; every 15th run also band snapshots and pruning. */
  async tick(now = nowSeconds()): Promise<void> {
    const run = this.running.then(async () => {
      const full = this.ticks % SNAPSHOT_EVERY_TICKS === 0;
      this.ticks += 1;
      await this.flush();
      await this.store.rollups.sampleAgents(now);
      if (full) {
        await this.snapshotBands(now);
        await this.store.rollups.prune(now - (now % DAY) - ROLLUP_RETENTION_DAYS * DAY);
      }
    });
    this.running = run.catch(() => undefined);
    return run;
  }

  /** Runs the job now and every minute (the timer does not keep the process alive). */
  start(): void {
    if (this.timer) return;
    const tick = () => void this.tick().catch((err: unknown) => this.log.warn({ err }, 'rollup job failed; its counts are kept for the next run'));
    this.timer = setInterval(tick, ROLLUP_TICK_MS);
    this.timer.unref();
    tick();
  }

  /** Stops the job and writes what is counted (app shutdown). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
    await this.flush();
  }

  /**
   * The organization's series over the last `days` days, dense (every hour and day of the range,
   * 0 where nothing was stored) except the band snapshots. This replica's counts are flushed and
   * the organization's agents sampled first; its bands are snapshotted only when today has none.
   */
  async history(org: Organization, days: number, now = nowSeconds()): Promise<OverviewHistoryResponse> {
    await this.flush();
    await this.store.rollups.sampleAgents(now, org.id);
    if (!(await this.store.rollups.hasBandSnapshot(org.id, now))) await this.snapshotBands(now, org);
    const lastHour = now - (now % HOUR);
    const firstHour = lastHour - days * 24 * HOUR;
    const lastDay = now - (now % DAY);
    const firstDay = lastDay - days * DAY;
    const stored = await this.store.rollups.series(org.id, firstHour);
    const reports = new Map(stored.reports.map((r) => [r.hour, r]));
    const agents = new Map(stored.agents.map((r) => [r.hour, r]));
    const coins = new Map(stored.coins.map((r) => [r.day, r.coins]));
    const hours: number[] = [];
    for (let h = firstHour; h <= lastHour; h += HOUR) hours.push(h);
    const dayList: number[] = [];
    for (let d = firstDay; d <= lastDay; d += DAY) dayList.push(d);
    return {
      at: now,
      days,
      reports_per_hour: hours.map((hour) => ({ hour, organization: reports.get(hour)?.organization ?? 0, alliance: reports.get(hour)?.alliance ?? 0 })),
      agents_alive_per_hour: hours.map((hour) => ({ hour, alive: agents.get(hour)?.alive ?? 0, active: agents.get(hour)?.active ?? 0 })),
      coins_spent_per_day: dayList.map((day) => ({ day, coins: coins.get(day) ?? 0 })),
      indicators_per_band: stored.bands.filter((b) => b.day >= firstDay),
    };
  }
}

/**
 * The last bucket key made per organization: a count (every charged request) reuses the same
 * string, whose hash is computed once, instead of building and hashing a new one.
 */
type KeyMemo = Map<number, { at: number; key: string }>;

function bump(map: Map<string, number>, keys: KeyMemo, orgId: number, at: number, n: number): void {
  let memo = keys.get(orgId);
  if (memo?.at !== at) {
    memo = { at, key: `${orgId}:${at}` };
    keys.set(orgId, memo);
  }
  map.set(memo.key, (map.get(memo.key) ?? 0) + n);
}

function unkey(key: string): { orgId: number; at: number } {
  const [org, at] = key.split(':');
  return { orgId: Number(org), at: Number(at) };
}
