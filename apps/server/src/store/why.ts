import type { Queryable } from './db.ts';
import type { BrowseKind } from './browse.ts';

export interface ReporterRow {
  gid: string;
  name: string;
  trust: number;
  confidence: number;
  events: number;
  first_ts: number;
  last_ts: number;
  sources: string[];
}

export interface DecisionOn {
  decision: 0 | 1;
  ttl: number | null;
  on: string;
  reason: string | null;
  set_by: string | null;
}

type NoteColumns = { reason: string | null; set_by: string | null };
const note = (r: NoteColumns) => ({ reason: r.reason, set_by: r.set_by });

const REPORTS: Record<BrowseKind, string> = { ipv4: 'ipv4_reports', domain: 'domain_reports', url: 'url_reports', file: 'file_reports' };

/** What "why is this blocked?" reads beyond the look-ups: decisions of unheld values and named reporters. */
export class WhyStore {
  constructor(private readonly db: Queryable) {}

  /** The organization's most specific IPv4 decision (0 or 1) covering the whole network, held or not. */
  async ipv4Decision(orgId: number, network: string): Promise<DecisionOn | undefined> {
    const res = await this.db.query<{ decision: number; ttl: number | null; on: string } & NoteColumns>(
      `select decision, ttl, reason, set_by, case when masklen(network) = 32 then host(network) else network::text end as on
       from ipv4_decisions where org_id = $1 and network >>= $2::cidr and decision in (0, 1)
       order by masklen(network) desc limit 1`,
      [orgId, network],
    );
    const r = res.rows[0];
    return r && { decision: Number(r.decision) as 0 | 1, ttl: r.ttl === null ? null : Number(r.ttl), on: r.on, ...note(r) };
  }

  /** The organization's decision (0 or 1) on a domain or URL value, or on one of a file's digests (latest wins). */
  async namedDecision(kind: 'domain' | 'url', orgId: number, value: string): Promise<DecisionOn | undefined> {
    const table = kind === 'domain' ? 'domain_decisions' : 'url_decisions';
    const res = await this.db.query<{ decision: number } & NoteColumns>(`select decision, reason, set_by from ${table} where org_id = $1 and value = $2 and decision in (0, 1)`, [orgId, value]);
    const r = res.rows[0];
    return r && { decision: Number(r.decision) as 0 | 1, ttl: null, on: value, ...note(r) };
  }

  async fileDecision(orgId: number, digestsHex: string[]): Promise<DecisionOn | undefined> {
    const res = await this.db.query<{ decision: number; on: string } & NoteColumns>(
      `select decision, reason, set_by, upper(encode(digest, 'hex')) as on from file_decisions
       where org_id = $1 and digest = any($2::bytea[]) and decision in (0, 1) order by updated_at desc limit 1`,
      [orgId, digestsHex.map((h) => Buffer.from(h, 'hex'))],
    );
    const r = res.rows[0];
    return r && { decision: Number(r.decision) as 0 | 1, ttl: null, on: r.on, ...note(r) };
  }

  /** Every organization that reported the indicator, with what its reports contribute. */
  async reporters(kind: BrowseKind, indicatorId: number): Promise<ReporterRow[]> {
    const sources = kind === 'ipv4' ? 'r.sources' : `'{}'::text[]`;
    const res = await this.db.query<ReporterRow>(
      `select o.gid, o.name, o.trust, r.confidence, r.events, r.first_ts, r.last_ts, ${sources} as sources
       from ${REPORTS[kind]} r join organizations o on o.id = r.org_id
       where r.indicator_id = $1 order by r.last_ts desc, o.gid`,
      [indicatorId],
    );
    return res.rows.map((r) => ({ ...r, trust: Number(r.trust), confidence: Number(r.confidence), events: Number(r.events), first_ts: Number(r.first_ts), last_ts: Number(r.last_ts) }));
  }
}
