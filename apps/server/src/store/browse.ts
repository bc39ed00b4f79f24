import type { Queryable } from './db.ts';

/*
 * Browsing one organization's decisions and the indicators it sees (`GET /decisions`,
 * `GET /indicators`). Pages are keyset pages, newest first: the position after the last row is
 * what the service signs into the cursor, so a page costs an index range however deep it is.
 * Table names come from constants below, never from input; every value is a parameter.
 */

export type BrowseKind = 'ipv4' | 'domain' | 'url' | 'file';

export interface DecisionRow {
  kind: BrowseKind;
  value: string;
  decision: 0 | 1;
  ttl: number | null;
  /** Epoch microseconds of `updated_at`: the page key with kind and value. */
  micros: string;
  updated_at: string;
  held: boolean;
  score: number | null;
  ts: number | null;
  reason: string | null;
  set_by: string | null;
}

export interface DecisionFilter {
  orgId: number;
  kinds: BrowseKind[];
  decision: 0 | 1 | null;
  text: string | null;
  /** Position after which the page starts: [micros, kind, value] of the last row served. */
  after: [string, string, string] | null;
  limit: number;
}

/** Shown value of a network: a single address without `/32`. */
const IPV4_VALUE = (col: string) => `case when masklen(${col}) = 32 then host(${col}) else ${col}::text end`;

const DECISION_BRANCHES: Record<BrowseKind, string> = {
  ipv4: `select 'ipv4' as kind, ${IPV4_VALUE('d.network')} as value, d.decision, d.ttl, d.updated_at, d.reason, d.set_by,
      i.id is not null as held, coalesce(a.score, i.score) as score, coalesce(a.ts, i.ts) as ts
    from ipv4_decisions d
    left join ipv4_indicators i on i.network = d.network
    left join ipv4_org_anchors a on a.org_id = d.org_id and a.indicator_id = i.id and a.ts > i.ts
    where d.org_id = $1 and d.decision in (0, 1)`,
  domain: `select 'domain' as kind, d.value, d.decision, null::bigint as ttl, d.updated_at, d.reason, d.set_by,
      i.id is not null as held, coalesce(a.score, i.score) as score, coalesce(a.ts, i.ts) as ts
    from domain_decisions d
    left join domain_indicators i on i.value = d.value
    left join domain_org_anchors a on a.org_id = d.org_id and a.indicator_id = i.id and a.ts > i.ts
    where d.org_id = $1 and d.decision in (0, 1)`,
  url: `select 'url' as kind, d.value, d.decision, null::bigint as ttl, d.updated_at, d.reason, d.set_by,
      i.id is not null as held, coalesce(a.score, i.score) as score, coalesce(a.ts, i.ts) as ts
    from url_decisions d
    left join url_indicators i on i.value = d.value
    left join url_org_anchors a on a.org_id = d.org_id and a.indicator_id = i.id and a.ts > i.ts
    where d.org_id = $1 and d.decision in (0, 1)`,
  file: `select 'file' as kind, upper(encode(d.digest, 'hex')) as value, d.decision, null::bigint as ttl, d.updated_at, d.reason, d.set_by,
      i.id is not null as held, coalesce(a.score, i.score) as score, coalesce(a.ts, i.ts) as ts
    from file_decisions d
    left join file_indicators i on d.digest in (i.md5, i.sha1, i.sha256)
    left join file_org_anchors a on a.org_id = d.org_id and a.indicator_id = i.id and a.ts > i.ts
    where d.org_id = $1 and d.decision in (0, 1)`,
};

export interface IndicatorRow {
  id: number;
  value: string;
  gid: string | null;
  score: number;
  ts: number;
  entry_ts: number;
  members: number;
  events: number;
  sources: string[];
  tags: string[];
  ip_info: Record<string, string> | null;
  decision: number | null;
  ttl: number | null;
}

export interface IndicatorFilter {
  orgId: number;
  kind: BrowseKind;
  now: number;
  /** The organization's delay: rows with a later effective ts are not visible yet; null = none. */
  visibleUpTo: number | null;
  /** Live score bounds, inclusive min and max (a band's exclusive max is passed as `maxExclusive`). */
  minScore: number | null;
  maxScore: number | null;
  maxExclusive: number | null;
  /** 'none': no decision of 0 or 1 in force. */
  decision: 'none' | 0 | 1 | null;
  source: string | null;
  tag: string | null;
  reporterOrgId: number | null;
  country: string | null;
  asn: string | null;
  text: string | null;
  after: [number, number] | null;
  limit: number;
}

const INDICATOR_TABLES: Record<BrowseKind, { indicators: string; reports: string; anchors: string }> = {
  ipv4: { indicators: 'ipv4_indicators', reports: 'ipv4_reports', anchors: 'ipv4_org_anchors' },
  domain: { indicators: 'domain_indicators', reports: 'domain_reports', anchors: 'domain_org_anchors' },
  url: { indicators: 'url_indicators', reports: 'url_reports', anchors: 'url_org_anchors' },
  file: { indicators: 'file_indicators', reports: 'file_reports', anchors: 'file_org_anchors' },
};

/** Value column and the organization's decision (alias d: decision, ttl) per kind. */
const INDICATOR_SHAPE: Record<BrowseKind, { value: string; extra: string; decision: string }> = {
  ipv4: {
    value: IPV4_VALUE('i.network'),
    extra: 'i.gid, i.sources, i.ip_info',
    decision: `left join lateral (select decision, ttl from ipv4_decisions where org_id = $1 and network >>= i.network order by masklen(network) desc limit 1) d on true`,
  },
  domain: {
    value: 'i.value',
    extra: `null::text as gid, '{}'::text[] as sources, null::jsonb as ip_info`,
    decision: `left join lateral (select decision, null::bigint as ttl from domain_decisions where org_id = $1 and value = i.value) d on true`,
  },
  url: {
    value: 'i.value',
    extra: `null::text as gid, '{}'::text[] as sources, null::jsonb as ip_info`,
    decision: `left join lateral (select decision, null::bigint as ttl from url_decisions where org_id = $1 and value = i.value) d on true`,
  },
  file: {
    value: `upper(encode(coalesce(i.sha256, i.sha1, i.md5), 'hex'))`,
    extra: `null::text as gid, '{}'::text[] as sources, null::jsonb as ip_info`,
    decision: `left join lateral (select decision, null::bigint as ttl from file_decisions where org_id = $1 and digest in (i.md5, i.sha1, i.sha256) order by updated_at desc limit 1) d on true`,
  },
};

/** The live score of decay formula (packages/scoring) in SQL, exponent capped so exp() cannot overflow. */
const LIVE = (score: string, ts: string, now: string) =>
  `(${score} / (1 + exp(least(700.0, (3.0 / ${score}) * (greatest(${now} - ${ts}, 0) / 3600.0 - 2.5 * ${score})))))`;

export class BrowseStore {
  constructor(private readonly db: Queryable) {}

  async decisions(f: DecisionFilter): Promise<DecisionRow[]> {
    const params: unknown[] = [f.orgId];
    const add = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    const where: string[] = [];
    if (f.decision !== null) where.push(`u.decision = ${add(f.decision)}`);
    if (f.text !== null) where.push(`strpos(lower(u.value), lower(${add(f.text)})) > 0`);
    if (f.after) where.push(`(u.micros, u.kind, u.value) < (${add(f.after[0])}::bigint, ${add(f.after[1])}::text, ${add(f.after[2])}::text)`);
    const union = f.kinds.map((k) => `(${DECISION_BRANCHES[k]})`).join(' union all ');
    const res = await this.db.query<DecisionRow>(
      `select u.kind, u.value, u.decision::int as decision, u.ttl, u.micros::text as micros, u.updated_at, u.held, u.score, u.ts, u.reason, u.set_by
       from (select b.*, (extract(epoch from b.updated_at) * 1000000)::bigint as micros from (${union}) b) u
       ${where.length ? `where ${where.join(' and ')}` : ''}
       order by u.micros desc, u.kind desc, u.value desc
       limit ${add(f.limit)}`,
      params,
    );
    return res.rows.map((r) => ({
      ...r,
      decision: Number(r.decision) as 0 | 1,
      ttl: r.ttl === null ? null : Number(r.ttl),
      score: r.score === null ? null : Number(r.score),
      ts: r.ts === null ? null : Number(r.ts),
      updated_at: new Date(r.updated_at).toISOString(),
    }));
  }

  async indicators(f: IndicatorFilter): Promise<IndicatorRow[]> {
    const t = INDICATOR_TABLES[f.kind];
    const shape = INDICATOR_SHAPE[f.kind];
    const params: unknown[] = [f.orgId];
    const add = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    let nowRef: string | undefined;
    const now = () => (nowRef ??= `${add(f.now)}::bigint`);
    const limit = `${add(f.limit)}::bigint`;
    // Filters over one branch's (ts, score) pair; `i` is the indicator row, `d` its decision.
    const conditions = (ts: string, score: string): string[] => {
      const live = () => LIVE(score, ts, now());
      const where: string[] = [];
      if (f.visibleUpTo !== null) where.push(`${ts} <= ${add(f.visibleUpTo)}::bigint`);
      if (f.minScore !== null) where.push(`${live()} >= ${add(f.minScore)}::float8`);
      if (f.maxScore !== null) where.push(`${live()} <= ${add(f.maxScore)}::float8`);
      if (f.maxExclusive !== null) where.push(`${live()} < ${add(f.maxExclusive)}::float8`);
      if (f.decision === 'none') where.push(`(d.decision is null or d.decision not in (0, 1) or (d.decision = 1 and d.ttl is not null and d.ttl <= ${now()}))`);
      else if (f.decision === 0) where.push('d.decision = 0');
      else if (f.decision === 1) where.push(`d.decision = 1 and (d.ttl is null or d.ttl > ${now()})`);
      if (f.source !== null) where.push(`${add(f.source)} = any(i.sources)`);
      if (f.tag !== null) where.push(`${add(f.tag)} = any(i.tags)`);
      if (f.reporterOrgId !== null) where.push(`exists (select 1 from ${t.reports} r where r.indicator_id = i.id and r.org_id = ${add(f.reporterOrgId)}::bigint)`);
      if (f.country !== null) where.push(`upper(i.ip_info->>'country') = ${add(f.country)}`);
      if (f.asn !== null) where.push(`upper(i.ip_info->>'asn') = ${add(f.asn)}`);
      if (f.text !== null) where.push(`strpos(lower(${shape.value}), lower(${add(f.text)})) > 0`);
      if (f.after) where.push(`(${ts}, i.id) < (${add(f.after[0])}::bigint, ${add(f.after[1])}::bigint)`);
      return where;
    };
    // Two branches, each read newest first from its (ts, id) index and stopping at the page size:
    // records whose own pair is in force for the organization, and its newer anchors (migration
    // 0011). The decision is joined inside a branch only when a filter needs it; the page is then
    // joined with what it shows, so a page costs the rows it reads, not the whole table.
    const decisionJoin = f.decision !== null ? shape.decision : '';
    const branch = (anchored: boolean) => {
      const [ts, score] = anchored ? ['a.ts', 'a.score'] : ['i.ts', 'i.score'];
      const from = anchored
        ? `${t.anchors} a join ${t.indicators} i on i.id = a.indicator_id ${decisionJoin} where a.org_id = $1 and a.ts > i.ts`
        : `${t.indicators} i ${decisionJoin} where not exists (select 1 from ${t.anchors} x where x.org_id = $1 and x.indicator_id = i.id and x.ts > i.ts)`;
      const extra = conditions(ts, score).map((c) => ` and ${c}`).join('');
      return `(select i.id, ${ts} as ts, ${score} as score from ${from}${extra} order by ${ts} desc, i.id desc limit ${limit})`;
    };
    const res = await this.db.query<IndicatorRow>(
      `select i.id, ${shape.value} as value, ${shape.extra}, k.score, k.ts, i.entry_ts, i.members, i.events, i.tags, d.decision, d.ttl
       from (select * from (${branch(false)} union all ${branch(true)}) u order by u.ts desc, u.id desc limit ${limit}) k
       join ${t.indicators} i on i.id = k.id
       ${shape.decision}
       order by k.ts desc, k.id desc`,
      params,
    );
    return res.rows.map((r) => ({
      ...r,
      id: Number(r.id),
      score: Number(r.score),
      ts: Number(r.ts),
      entry_ts: Number(r.entry_ts),
      members: Number(r.members),
      events: Number(r.events),
      decision: r.decision === null ? null : Number(r.decision),
      ttl: r.ttl === null ? null : Number(r.ttl),
    }));
  }
}
