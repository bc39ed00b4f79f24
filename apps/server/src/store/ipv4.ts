import type { Db } from './db.ts';

export interface Ipv4Row {
  id: number;
  gid: string;
  network: string;
  is_network: boolean;
  score: number;
  ts: number;
  entry_ts: number;
  members: number;
  events: number;
  sources: string[];
  notes: string[];
  tags: string[];
  ip_info: Record<string, string> | null;
  decision: number | null;
  ttl: number | null;
}

const SELECT = `select i.id, i.gid, i.network::text as network, i.is_network, i.score, i.ts, i.entry_ts, i.members,
  i.events, i.sources, i.notes, i.tags, i.ip_info, d.decision, d.ttl
  from ipv4_indicators i
  left join lateral (
    select decision, ttl from ipv4_decisions
    where org_id = $1 and network >>= i.network
    order by masklen(network) desc limit 1
  ) d on true`;

export class Ipv4Store {
  constructor(private readonly db: Db) {}

  /**
   * The first second whose records may still be written. Waiting for the feed clock's lock
   * means every writer that took a `ts` before this call has committed; every later writer
   * gets a `ts` of at least the returned second.
   */
  private async completeBefore(): Promise<number> {
    const res = await this.db.query<{ r: number }>('select floor(extract(epoch from clock_timestamp()))::bigint as r');
    await this.db.query('select 1 from feed_clock where id = 1 for share');
    return res.rows[0]!.r;
  }

  /**
   * One page of the `/ips` feed: records with `ts` > since, by (ts, id), never splitting a
   * group that shares one `ts`, and only records at least `delaySeconds` old.
   */
  async feedPage(orgId: number, since: number, pageSize: number, delaySeconds: number): Promise<Ipv4Row[]> {
    const complete = await this.completeBefore();
    const upper = Math.min(complete, complete - delaySeconds + 1);
    const page = await this.db.query<Ipv4Row>(`${SELECT} where i.ts > $2 and i.ts < $3 order by i.ts, i.id limit $4`, [orgId, since, upper, pageSize]);
    const rows = page.rows;
    const last = rows.at(-1);
    if (rows.length === pageSize && last) {
      const rest = await this.db.query<Ipv4Row>(`${SELECT} where i.ts = $2 and i.id > $3 order by i.id`, [orgId, last.ts, last.id]);
      rows.push(...rest.rows);
    }
    return rows;
  }

  async byAddress(orgId: number, ip: string): Promise<Ipv4Row | undefined> {
    const res = await this.db.query<Ipv4Row>(`${SELECT} where i.network = $2::cidr`, [orgId, `${ip}/32`]);
    return res.rows[0];
  }
}
