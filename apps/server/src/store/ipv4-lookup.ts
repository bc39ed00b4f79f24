import type { Db } from './db.ts';
import type { Ipv4Row } from './ipv4.ts';
import { LookupBatcher } from './lookup-batcher.ts';

/**
 * `Ipv4Store.holding` for many (organization, address) pairs in one statement: for each pair,
 * the records holding the address (the address itself and every network containing it), most
 * specific first, each with that organization's anchor (migration 0011) and most specific decision. `k` is the pair's
 * 1-based position.
 *
 * `limit 33` drops nothing (networks are unique, and an address lies in one network of each
 * prefix length 0..32); it keeps the planner's estimate of the index probes (thousands of rows
 * each, for want of statistics on `>>=`) from crossing jit_above_cost, whose compilation took
 * 5-8 ms per batch of 32 where the statement itself takes 0.5 ms.
 */
const HOLDING_HELD = `select q.k::integer as k, i.id, i.gid, i.network::text as network, i.is_network,
  coalesce(a.score, i.score) as score, coalesce(a.ts, i.ts) as ts, i.entry_ts,
  i.members, i.events, i.sources, i.notes, i.tags, i.ip_info, d.decision, d.ttl
  from unnest($1::bigint[], $2::cidr[]) with ordinality as q(org_id, net, k)
  cross join lateral (
    select * from ipv4_indicators h where h.network >>= q.net limit 33
  ) i
  left join ipv4_org_anchors a on a.org_id = q.org_id and a.indicator_id = i.id and a.ts > i.ts
  left join lateral (
    select decision, ttl from ipv4_decisions
    where org_id = q.org_id and network >>= i.network
    order by masklen(network) desc limit 1
  ) d on true`;

/** And each organization's decisions covering the address on values nobody reported (migration 0017), as records. */
const HOLDING_MANY = `select * from (
  (${HOLDING_HELD})
  union all
  (select q.k::integer, d.id, d.gid, d.network::text, masklen(d.network) < 32, 0, d.ts, d.ts, 0, 0,
     '{}'::text[], '{}'::text[], '{}'::text[], null::jsonb, d.decision, case when d.decision = 1 then d.ttl end
   from unnest($1::bigint[], $2::cidr[]) with ordinality as q(org_id, net, k)
   join ipv4_decisions d on d.org_id = q.org_id and d.network >>= q.net and d.decision in (0, 1)
   where not exists (select 1 from ipv4_indicators h where h.network = d.network))
) r order by r.k, masklen(r.network::cidr) desc, r.id`;

export interface HoldingKey {
  orgId: number;
  /** Dotted IPv4 address (validated by the route). */
  ip: string;
}

/** Records holding each key's address, in the order of `keys` (one statement). */
export async function holdingMany(db: Db, keys: readonly HoldingKey[]): Promise<Ipv4Row[][]> {
  const res = await db.query<Ipv4Row & { k: number }>(
    HOLDING_MANY,
    [keys.map((k) => k.orgId), keys.map((k) => `${k.ip}/32`)],
    { name: 'rampart_ipv4_holding_many' },
  );
  const out = keys.map((): Ipv4Row[] => []);
  for (const row of res.rows) {
    const { k, ...rest } = row;
    out[k - 1]!.push(rest);
  }
  return out;
}

/**
 * The look-ups of `GET /ips/{ipv4}` on one replica, batched (see LookupBatcher): as fresh as one
 * query per request. The rows returned are shared between callers that asked for the same
 * pair at once: read them, do not change them.
 */
export class Ipv4Lookup {
  private readonly batcher: LookupBatcher<HoldingKey, Ipv4Row[]>;

  constructor(db: Db, options: { maxInFlight?: number; maxBatch?: number } = {}) {
    this.batcher = new LookupBatcher({
      id: (k) => `${k.orgId} ${k.ip}`,
      run: (keys) => holdingMany(db, keys),
      ...options,
    });
  }

  holding(orgId: number, ip: string): Promise<Ipv4Row[]> {
    return this.batcher.load({ orgId, ip });
  }
}
