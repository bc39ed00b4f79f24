import type { Db, Queryable } from './db.ts';

/** One entry a bouncer key was sent and holds (migration 0016). */
export interface DeliveredEntry {
  /** Canonical CIDR text (`/32` for one address). */
  network: string;
  indicatorId: number;
  /** Epoch second until which the bouncer's kernel keeps the entry at least. */
  keptUntil: number;
  scenario: string;
}

/** What one call changes in a key's cursor: entries (re)sent and entries withdrawn. */
export interface CursorChange {
  /** true: the cursor is replaced by `upsert` (a start-up call). */
  replace: boolean;
  upsert: DeliveredEntry[];
  remove: string[];
}

/** Rows written per statement: keeps each parameter array to a few hundred kilobytes. */
const WRITE_CHUNK = 10_000;

/** The cursors of CrowdSec bouncer keys (services/crowdsec/bouncers.ts). */
export class CrowdsecStore {
  constructor(private readonly db: Db) {}

  /**
   * Runs one call of key `tokenId` against its cursor, in one transaction: the cursor row is
   * created or locked first (two calls of one key are applied one after the other, each against
   * what the other left), `decide` gets what the key was sent so far and returns the change,
   * which is written before the commit. A call that throws changes nothing.
   */
  async advance<T>(tokenId: string, agentId: number, startup: boolean, decide: (delivered: DeliveredEntry[]) => { change: CursorChange; result: T }): Promise<T> {
    return this.db.transaction(async (tx) => {
      await tx.query(
        `insert into crowdsec_cursors (token_id, agent_id, last_call_at, last_startup_at) values ($1, $2, now(), case when $3 then now() end)
         on conflict (token_id) do update set last_call_at = now(),
           last_startup_at = case when $3 then now() else crowdsec_cursors.last_startup_at end`,
        [tokenId, agentId, startup],
      );
      const delivered = await this.delivered(tx, tokenId);
      const { change, result } = decide(delivered);
      await this.write(tx, tokenId, change);
      return result;
    });
  }

  private async delivered(q: Queryable, tokenId: string): Promise<DeliveredEntry[]> {
    const res = await q.query<DeliveredEntry>(
      `select network::text as network, indicator_id as "indicatorId", kept_until as "keptUntil", scenario
       from crowdsec_delivered where token_id = $1 order by network`,
      [tokenId],
    );
    return res.rows.map((r) => ({ ...r, indicatorId: Number(r.indicatorId), keptUntil: Number(r.keptUntil) }));
  }

  private async write(q: Queryable, tokenId: string, change: CursorChange): Promise<void> {
    if (change.replace) await q.query('delete from crowdsec_delivered where token_id = $1', [tokenId]);
    for (let i = 0; i < change.remove.length; i += WRITE_CHUNK) {
      await q.query('delete from crowdsec_delivered where token_id = $1 and network = any($2::cidr[])', [tokenId, change.remove.slice(i, i + WRITE_CHUNK)]);
    }
    for (let i = 0; i < change.upsert.length; i += WRITE_CHUNK) {
      const part = change.upsert.slice(i, i + WRITE_CHUNK);
      await q.query(
        `insert into crowdsec_delivered (token_id, network, indicator_id, kept_until, scenario)
         select $1, n, id, k, s from unnest($2::cidr[], $3::bigint[], $4::bigint[], $5::text[]) as u(n, id, k, s)
         on conflict (token_id, network) do update set indicator_id = excluded.indicator_id, kept_until = excluded.kept_until, scenario = excluded.scenario`,
        [tokenId, part.map((e) => e.network), part.map((e) => e.indicatorId), part.map((e) => e.keptUntil), part.map((e) => e.scenario)],
      );
    }
  }

  /** Records the last usage-metrics body a key sent (one per key, replaced by the next). */
  async recordUsageMetrics(tokenId: string, agentId: number, metrics: unknown): Promise<void> {
    await this.db.query(
      `insert into crowdsec_cursors (token_id, agent_id, usage_metrics, usage_metrics_at) values ($1, $2, $3::jsonb, now())
       on conflict (token_id) do update set usage_metrics = excluded.usage_metrics, usage_metrics_at = excluded.usage_metrics_at`,
      [tokenId, agentId, JSON.stringify(metrics)],
    );
  }

  /** A key's cursor figures (tests and the console): entries held, last calls, last metrics. */
  async cursor(tokenId: string): Promise<{ entries: number; lastCallAt: number | null; lastStartupAt: number | null; usageMetrics: unknown; usageMetricsAt: number | null } | undefined> {
    const res = await this.db.query<{ entries: number; last_call_at: number | null; last_startup_at: number | null; usage_metrics: unknown; usage_metrics_at: number | null }>(
      `select (select count(*) from crowdsec_delivered d where d.token_id = c.token_id)::integer as entries,
         floor(extract(epoch from c.last_call_at))::bigint as last_call_at, floor(extract(epoch from c.last_startup_at))::bigint as last_startup_at,
         c.usage_metrics, floor(extract(epoch from c.usage_metrics_at))::bigint as usage_metrics_at
       from crowdsec_cursors c where c.token_id = $1`,
      [tokenId],
    );
    const r = res.rows[0];
    if (!r) return undefined;
    const n = (v: number | null) => (v === null ? null : Number(v));
    return { entries: r.entries, lastCallAt: n(r.last_call_at), lastStartupAt: n(r.last_startup_at), usageMetrics: r.usage_metrics, usageMetricsAt: n(r.usage_metrics_at) };
  }
}
