import type { Db, Transaction } from './db.ts';
import { IPV4_FEED_LOCK_CLASS } from './ipv4.ts';

/** One validated report (or decision) of one organization; `network` is canonical CIDR text. */
export interface Ipv4ReportItem {
  orgId: number;
  network: string;
  isNetwork: boolean;
  /** New indicator's gid, used only when the network is not held yet. */
  gid: string;
  confidence: number;
  source: string;
  notes: string | null;
  /** false for a whitelist-only call: the organization's decision changes, no report is counted. */
  addReport: boolean;
  /** null leaves the organization's decision as it is. */
  decision: { value: -1 | 0 | 1; ttl: number | null } | null;
  /** Enrichment of a new indicator (spec 2.3 `ip_info`); kept as first stored. */
  ipInfo: Record<string, string> | null;
}

export type Ipv4ReportOutcome =
  | { status: 'stored'; created: boolean; indicatorTs: number | null }
  | { status: 'reserved'; range: string };

export interface ReporterAggregate {
  orgId: number;
  trust: number;
  confidence: number;
  events: number;
}

/** The business rules the write path needs (scoring v3.2), given by the service layer. */
export interface IngestRules {
  score(aggregates: ReporterAggregate[]): number;
  anchor(previousTs: number | null, previousOrgs: string[], orgId: string, reportTs: number): number;
}

export interface IngestResult {
  outcomes: Ipv4ReportOutcome[];
  /** The feed clock second taken by the batch, null when no record's ts moved. */
  feedTs: number | null;
  decisions: Array<{ orgId: number; network: string; decision: -1 | 0 | 1; ttl: number | null }>;
}

interface Contribution {
  orgId: number;
  events: number;
  confidence: number;
  sources: string[];
  notes: string[];
}

interface HeldRow {
  id: number;
  network: string;
  ts: number;
  entry_ts: number;
}

const json = (value: unknown) => JSON.stringify(value);


/**
 * Stores a batch of IPv4 reports in ONE transaction, so the whole batch costs one commit (one
 * WAL flush), in five round trips whatever its size. Lock order, the same in every batch, keeps
 * batches on several connections or replicas free of deadlocks: indicator rows by network, then
 * decisions by (org, network), then report rows. A batch that moves a record's `ts` holds a
 * SHARED advisory lock on its second from the final statement to the commit (feed readers see it
 * in pg_locks and stop before that second), so batches never wait for each other's commits. The indicator row lock is taken
 * before the reporters are read, so two batches never score one indicator from a stale set of
 * reporters. Reserved addresses are found in the same statement that takes the row locks, from
 * the settings as committed, and change nothing.
 */
export async function ingestIpv4Batch(db: Db, items: Ipv4ReportItem[], rules: IngestRules, nowSeconds: number): Promise<IngestResult> {
  return db.transaction(async (tx) => {
    const outcomes: Array<Ipv4ReportOutcome | undefined> = new Array(items.length);
    const first = await tx.query<{ reserved: Array<{ idx: number; range: string }>; held: HeldRow[] }>(
      `with u as (
         select * from jsonb_to_recordset($1::jsonb)
           as u(idx integer, org_id bigint, network cidr, gid text, is_network boolean, ip_info jsonb, add_report boolean)
       ), reserved as (
         select distinct on (u.idx) u.idx, r.value as range
         from u
         join organization_settings s on s.org_id = u.org_id
         cross join lateral jsonb_array_elements_text(coalesce(s.document -> 'reserved_ips', '[]'::jsonb)) as r(value)
         where r.value::inet && u.network::inet
         order by u.idx, r.value
       ), held as (
         insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, ip_info)
         select distinct on (u.network) u.gid, u.network, u.is_network, 1, 0, 0, u.ip_info
         from u
         where u.add_report and not exists (select 1 from reserved x where x.idx = u.idx)
         order by u.network, u.idx
         on conflict (network) do update set updated_at = now()
         returning id, network::text as network, ts, entry_ts
       )
       select
         (select coalesce(json_agg(json_build_object('idx', idx, 'range', range)), '[]'::json) from reserved) as reserved,
         (select coalesce(json_agg(json_build_object('id', id, 'network', network, 'ts', ts, 'entry_ts', entry_ts)), '[]'::json) from held) as held`,
      [
        json(
          items.map((item, idx) => ({
            idx,
            org_id: item.orgId,
            network: item.network,
            gid: item.gid,
            is_network: item.isNetwork,
            ip_info: item.ipInfo,
            add_report: item.addReport,
          })),
        ),
      ],
      { name: 'rampart_ipv4_ingest_hold' },
    );
    const reserved = new Map(first.rows[0]!.reserved.map((r) => [r.idx, r.range]));
    for (const [idx, range] of reserved) outcomes[idx] = { status: 'reserved', range };
    const accepted = items.map((item, idx) => ({ item, idx })).filter(({ idx }) => !reserved.has(idx));

    const decisions = await upsertDecisions(tx, accepted.map(({ item }) => item));
    const reports = accepted.filter(({ item }) => item.addReport);
    for (const { item, idx } of accepted) if (!item.addReport) outcomes[idx] = { status: 'stored', created: false, indicatorTs: null };
    if (reports.length === 0) return { outcomes: outcomes as Ipv4ReportOutcome[], feedTs: null, decisions };

    // Merge the batch per indicator and organization: repeats count events, the latest confidence wins.
    const byNetwork = new Map<string, Map<number, Contribution>>();
    for (const { item } of reports) {
      let orgs = byNetwork.get(item.network);
      if (!orgs) byNetwork.set(item.network, (orgs = new Map()));
      const c = orgs.get(item.orgId) ?? { orgId: item.orgId, events: 0, confidence: 0, sources: [], notes: [] };
      c.events += 1;
      c.confidence = item.confidence;
      if (!c.sources.includes(item.source)) c.sources.push(item.source);
      if (item.notes) c.notes.push(item.notes);
      orgs.set(item.orgId, c);
    }
    const networks = [...byNetwork.keys()];
    const held = { rows: first.rows[0]!.held.map((r) => ({ ...r, id: Number(r.id), ts: Number(r.ts), entry_ts: Number(r.entry_ts) })) };
    const rowByNetwork = new Map(held.rows.map((r) => [r.network, r]));
    const ids = held.rows.map((r) => r.id);
    const batchOrgs = [...new Set(reports.map(({ item }) => item.orgId))];

    // Earlier reporters of these indicators (read under the row locks just taken) and the trust of this batch's organizations.
    const known = await tx.query<{ id: number | null; org_id: number; confidence: number | null; events: number | null; trust: number }>(
      `select r.indicator_id as id, r.org_id, r.confidence, r.events, o.trust
       from ipv4_reports r join organizations o on o.id = r.org_id where r.indicator_id = any($1::bigint[])
       union all
       select null, id, null, null, trust from organizations where id = any($2::bigint[])`,
      [ids, batchOrgs],
      { name: 'rampart_ipv4_ingest_reporters' },
    );
    const trustOf = new Map<number, number>();
    const reportersOf = new Map<number, Map<number, ReporterAggregate>>();
    for (const r of known.rows) {
      if (r.id === null) {
        trustOf.set(r.org_id, r.trust);
        continue;
      }
      let m = reportersOf.get(r.id);
      if (!m) reportersOf.set(r.id, (m = new Map()));
      m.set(r.org_id, { orgId: r.org_id, trust: r.trust, confidence: r.confidence!, events: r.events! });
    }

    const reportRows: unknown[] = [];
    const updates: Array<{ id: number; score: number; reanchor: boolean; members: number; events: number; sources: string[]; notes: string[] }> = [];
    const createdByNetwork = new Map<string, boolean>();
    for (const network of networks) {
      const row = rowByNetwork.get(network)!;
      const created = row.entry_ts === 0;
      createdByNetwork.set(network, created);
      const reporters = reportersOf.get(row.id) ?? new Map<number, ReporterAggregate>();
      const previousTs = created ? null : row.ts;
      let reanchor = created;
      const entry = byNetwork.get(network)!;
      for (const c of entry.values()) {
        // The shared rule decides whether this report moves the clock; the second it moves to is
        // the feed clock's, taken in the batch's last statement (anchorTs never moves backwards,
        // and the feed clock never runs behind an earlier anchor).
        if (!reanchor && rules.anchor(previousTs, [...reporters.keys()].map(String), String(c.orgId), Number.MAX_SAFE_INTEGER) !== previousTs) reanchor = true;
        const before = reporters.get(c.orgId);
        reporters.set(c.orgId, {
          orgId: c.orgId,
          trust: trustOf.get(c.orgId) ?? 0,
          confidence: c.confidence,
          events: (before?.events ?? 0) + c.events,
        });
        reportRows.push({ id: row.id, org_id: c.orgId, confidence: c.confidence, events: c.events, ts: nowSeconds, sources: [...c.sources].sort() });
      }
      const aggregates = [...reporters.values()];
      updates.push({
        id: row.id,
        score: rules.score(aggregates),
        reanchor,
        members: aggregates.length,
        events: aggregates.reduce((sum, a) => sum + a.events, 0),
        sources: [...new Set([...entry.values()].flatMap((c) => c.sources))],
        notes: [...entry.values()].flatMap((c) => c.notes),
      });
    }

    // One statement: the feed clock (locked only now, until the commit), the merged report rows
    // and the indicators' new figures.
    const last = await tx.query<{ feed_ts: number | null; rows: Array<{ network: string; ts: number }> }>(
      `with clock as materialized (
         -- Lock the current second first, then choose ts from the clock read after the lock (the
         -- target list is projected once the lateral lock call has returned): ts >= locked second,
         -- and a reader that did not yet see the lock read its clock before ts (Ipv4Store.completeBefore).
         select floor(extract(epoch from clock_timestamp()))::bigint as ts
         from (select floor(extract(epoch from clock_timestamp()))::bigint as s) as x
         cross join lateral pg_advisory_xact_lock_shared($4::bigint * 4294967296 + x.s) as held
         where $3::boolean
       ), reports as (
         insert into ipv4_reports (indicator_id, org_id, confidence, events, first_ts, last_ts, sources)
         select u.id, u.org_id, u.confidence, u.events, u.ts, u.ts, u.sources
         from jsonb_to_recordset($1::jsonb) as u(id bigint, org_id bigint, confidence double precision, events integer, ts bigint, sources text[])
         order by u.id, u.org_id
         on conflict (indicator_id, org_id) do update set
           confidence = excluded.confidence,
           events = ipv4_reports.events + excluded.events,
           last_ts = excluded.last_ts,
           sources = array(select distinct s from unnest(ipv4_reports.sources || excluded.sources) as s order by s limit 32)
       ), changed as (
         update ipv4_indicators i set
           score = u.score,
           ts = case when u.reanchor then greatest(i.ts, (select ts from clock)) else i.ts end,
           entry_ts = case when i.entry_ts = 0 then (select ts from clock) else i.entry_ts end,
           members = u.members,
           events = u.events,
           sources = array(select distinct s from unnest(i.sources || u.sources) as s order by s limit 32),
           notes = (i.notes || u.notes)[greatest(1, cardinality(i.notes || u.notes) - 19):],
           updated_at = now()
         from jsonb_to_recordset($2::jsonb) as u(id bigint, score integer, reanchor boolean, members integer, events integer, sources text[], notes text[])
         where i.id = u.id
         returning i.network::text as network, i.ts
       )
       select (select ts from clock) as feed_ts, coalesce((select json_agg(json_build_object('network', network, 'ts', ts)) from changed), '[]'::json) as rows`,
      [json(reportRows), json(updates), updates.some((u) => u.reanchor), IPV4_FEED_LOCK_CLASS],
      { name: 'rampart_ipv4_ingest_write' },
    );
    const feedTs = last.rows[0]!.feed_ts;
    const tsOf = new Map(last.rows[0]!.rows.map((r) => [r.network, Number(r.ts)]));
    for (const { item, idx } of reports) {
      outcomes[idx] = { status: 'stored', created: createdByNetwork.get(item.network)!, indicatorTs: tsOf.get(item.network) ?? null };
    }
    return { outcomes: outcomes as Ipv4ReportOutcome[], feedTs, decisions };
  });
}

async function upsertDecisions(tx: Transaction, items: Ipv4ReportItem[]): Promise<IngestResult['decisions']> {
  const latest = new Map<string, IngestResult['decisions'][number]>();
  for (const item of items) {
    if (!item.decision) continue;
    latest.set(`${item.orgId} ${item.network}`, { orgId: item.orgId, network: item.network, decision: item.decision.value, ttl: item.decision.ttl });
  }
  if (latest.size === 0) return [];
  const rows = [...latest.values()].sort((a, b) => a.orgId - b.orgId || (a.network < b.network ? -1 : a.network > b.network ? 1 : 0));
  await tx.query(
    `insert into ipv4_decisions (org_id, network, decision, ttl)
     select u.org_id, u.network, u.decision, u.ttl
     from jsonb_to_recordset($1::jsonb) as u(org_id bigint, network cidr, decision smallint, ttl bigint)
     order by u.org_id, u.network
     on conflict (org_id, network) do update set decision = excluded.decision, ttl = excluded.ttl, updated_at = now()`,
    [json(rows.map((r) => ({ org_id: r.orgId, network: r.network, decision: r.decision, ttl: r.ttl })))],
  );
  return rows;
}
