import type { Db, Transaction } from './db.ts';
import { IPV4_FEED_LOCK_CLASS } from './ipv4.ts';
import { lockIndicators, type KnownRow, type LockedRow, type LockedRows } from './ipv4-ingest-lock.ts';
import { ReservedInBatchError } from './reserved-in-batch.ts';

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
  decision: { value: -1 | 0 | 1; ttl: number | null; reason?: string | null; setBy?: string | null } | null;
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
  anchor(previousTs: number | null, previousOrgs: string[], orgId: string, reportTs: number, scores?: { before: number; after: number }): number;
  /** The score of a record delivered again `elapsed` seconds after its anchor, without a report. */
  reanchoredScore(s0: number, elapsed: number): number;
  /**
   * `score` as tables SQL applies exactly (scoreV32Tables of @rampart/scoring): with them a batch
   * of plain reports runs as one statement (ipv4-ingest-one.ts), whose SQL is scoring v3.2's.
   */
  sqlTables?: { readonly repeatFactors: readonly number[]; readonly thresholds: readonly number[] };
}

/**
 * allOrNothing: a reserved item fails the whole batch (ReservedInBatchError) instead of being skipped.
 * notifyChannel (PostgreSQL): a batch run as one statement stores and sends its feed_changed there itself.
 */
export interface IngestOptions { allOrNothing?: boolean; notifyChannel?: string }

export interface IngestResult {
  outcomes: Ipv4ReportOutcome[];
  /** The feed clock second taken by the batch, null when no record's ts moved. */
  feedTs: number | null;
  decisions: Array<{ orgId: number; network: string; decision: -1 | 0 | 1; ttl: number | null }>;
  /** The batch's feed_changed went out with its commit (options.notifyChannel): not to be published again. */
  notified?: boolean;
}

interface Contribution {
  orgId: number;
  events: number;
  confidence: number;
  sources: string[];
  notes: string[];
}

const json = (value: unknown) => JSON.stringify(value);

/**
 * Stores a batch of IPv4 reports in ONE transaction, so the whole batch costs one commit (one
 * WAL flush), in four round trips whatever its size (one more with decisions, one more when a
 * held row changed while the batch waited for its lock). Lock order, the same in every batch,
 * keeps batches on several connections or replicas free of deadlocks: held
 * indicator rows by network, then new indicator rows by network, then decisions by (org,
 * network), then report rows. The indicator row lock is taken before the reporters are read, so
 * two batches never score one indicator from a stale set of reporters. Reserved addresses are
 * found in the same statement that takes the row locks, from the settings as committed, and
 * change nothing.
 *
 * Each indicator row gets ONE new version per batch whose index entries change (six indexes,
 * the GiST on network among them): held rows are locked with FOR UPDATE rather than touched by
 * a dummy update, and new rows are inserted with their final `ts`, `entry_ts` and `change_xid`,
 * so the update that writes their figures changes no indexed column and can be a HOT update.
 *
 * A batch that reports holds a SHARED advisory lock on the second of its `ts` from the first
 * statement to the commit (feed readers see it in pg_locks and stop before that second), so
 * batches never wait for each other's commits.
 */
export async function ingestIpv4Batch(
  db: Db,
  items: Ipv4ReportItem[],
  rules: IngestRules,
  nowSeconds: number,
  progress: IngestProgress = {},
  options: IngestOptions = {},
): Promise<IngestResult> {
  return db.transaction(async (tx) => {
    progress.begun?.();
    const outcomes: Array<Ipv4ReportOutcome | undefined> = new Array(items.length);
    const first = await lockIndicators(tx, items);
    progress.locked?.();
    const { clockTs } = first;
    const accepted = refuseReserved(items, first.reserved, outcomes, options);
    const decisions = await applyDecisions(tx, accepted, clockTs, rules);
    const reports = accepted.filter(({ item }) => item.addReport);
    for (const { item, idx } of accepted) if (!item.addReport) outcomes[idx] = { status: 'stored', created: false, indicatorTs: null };
    if (reports.length === 0) {
      progress.committing?.();
      return { outcomes: outcomes as Ipv4ReportOutcome[], feedTs: decisions.length > 0 ? clockTs : null, decisions };
    }
    if (clockTs === null) throw new Error('ipv4 ingest: the feed clock was not taken for a batch with reports');
    const known = await readReporters(tx, first);
    const scored = scoreNetworks(mergeContributions(reports), first.rows, known, rules, nowSeconds, clockTs);
    await writeScores(tx, scored, clockTs);
    for (const { item, idx } of reports) {
      const stored = scored.storedByNetwork.get(item.network)!;
      outcomes[idx] = { status: 'stored', created: stored.created, indicatorTs: stored.ts };
    }
    progress.committing?.();
    return { outcomes: outcomes as Ipv4ReportOutcome[], feedTs: scored.updates.some((u) => u.reanchor) || decisions.length > 0 ? clockTs : null, decisions };
  });
}

type Indexed = { item: Ipv4ReportItem; idx: number };

/** Reserved items are refused (or, all-or-nothing, fail the batch); the others are accepted, in batch order. */
function refuseReserved(items: Ipv4ReportItem[], reserved: Map<number, string>, outcomes: Array<Ipv4ReportOutcome | undefined>, options: IngestOptions): Indexed[] {
  if (options.allOrNothing && reserved.size > 0) {
    const [index, range] = [...reserved].sort((a, b) => a[0] - b[0])[0]!;
    throw new ReservedInBatchError(index, range);
  }
  for (const [idx, range] of reserved) outcomes[idx] = { status: 'reserved', range };
  return items.map((item, idx) => ({ item, idx })).filter(({ idx }) => !reserved.has(idx));
}

/** The accepted items' decisions, stored at the batch's second, and the records they cover re-anchored. */
async function applyDecisions(tx: Transaction, accepted: Indexed[], clockTs: number | null, rules: IngestRules): Promise<IngestResult['decisions']> {
  const decided = accepted.filter(({ item }) => item.decision !== null);
  if (decided.length > 0 && clockTs === null) throw new Error('ipv4 ingest: the feed clock was not taken for a batch with decisions');
  const decisions = await upsertDecisions(tx, decided.map(({ item }) => item), clockTs ?? 0);
  if (decisions.length > 0) await anchorDecided(tx, decisions, clockTs!, rules);
  return decisions;
}

/** The batch merged per indicator and organization: repeats count events, the latest confidence wins. */
function mergeContributions(reports: Indexed[]): Map<string, Map<number, Contribution>> {
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
  return byNetwork;
}

/** Earlier reporters by indicator, and the trust of the reporting organizations. */
interface Known {
  trustOf: Map<number, number>;
  reportersOf: Map<number, Map<number, ReporterAggregate>>;
}

/**
 * Earlier reporters of held rows whose latest version the lock statement's snapshot already
 * saw came with it; the others changed after that snapshot (a concurrent batch committed while
 * this one waited for the row lock) and are read again, now under the lock.
 */
async function readReporters(tx: Transaction, first: LockedRows): Promise<Known> {
  const stale = first.rows.filter((r) => !r.created && !r.fresh).map((r) => r.id);
  const known = [...first.known];
  if (stale.length > 0) {
    const again = await tx.query<KnownRow>(
      `select r.indicator_id as id, r.org_id, r.confidence, r.events, o.trust
       from ipv4_reports r join organizations o on o.id = r.org_id where r.indicator_id = any($1::bigint[])`,
      [stale],
      { name: 'rampart_ipv4_ingest_reporters' },
    );
    known.push(...again.rows);
  }
  const trustOf = new Map<number, number>();
  const reportersOf = new Map<number, Map<number, ReporterAggregate>>();
  for (const r of known) {
    if (r.id === null) {
      trustOf.set(r.org_id, r.trust);
      continue;
    }
    let m = reportersOf.get(r.id);
    if (!m) reportersOf.set(r.id, (m = new Map()));
    m.set(r.org_id, { orgId: r.org_id, trust: r.trust, confidence: r.confidence!, events: r.events! });
  }
  return { trustOf, reportersOf };
}

interface IndicatorUpdate {
  id: number;
  score: number;
  reanchor: boolean;
  members: number;
  events: number;
  sources: string[];
  notes: string[];
}

/** What the batch writes: the merged report rows, each indicator's new figures, and what each network's outcome says. */
interface Scored {
  reportRows: unknown[];
  updates: IndicatorUpdate[];
  storedByNetwork: Map<string, { created: boolean; ts: number }>;
}

/** Each indicator's reporters with the batch's contributions, scored, and whether the batch moves its clock. */
function scoreNetworks(byNetwork: Map<string, Map<number, Contribution>>, locked: LockedRow[], known: Known, rules: IngestRules, nowSeconds: number, clockTs: number): Scored {
  const scored: Scored = { reportRows: [], updates: [], storedByNetwork: new Map() };
  const rowByNetwork = new Map(locked.map((r) => [r.network, r]));
  for (const [network, entry] of byNetwork) {
    const row = rowByNetwork.get(network)!;
    const reporters = known.reportersOf.get(row.id) ?? new Map<number, ReporterAggregate>();
    const previousTs = row.created ? null : row.ts;
    const previousOrgs = [...reporters.keys()].map(String);
    for (const c of entry.values()) {
      const before = reporters.get(c.orgId);
      reporters.set(c.orgId, { orgId: c.orgId, trust: known.trustOf.get(c.orgId) ?? 0, confidence: c.confidence, events: (before?.events ?? 0) + c.events });
      scored.reportRows.push({ id: row.id, org_id: c.orgId, confidence: c.confidence, events: c.events, ts: nowSeconds, sources: [...c.sources].sort() });
    }
    const aggregates = [...reporters.values()];
    const score = rules.score(aggregates);
    const reanchor = movesClock(row, entry, previousTs, previousOrgs, { before: row.score, after: score }, rules);
    // A new row already carries its ts (>= clockTs); the same rule as the update in writeScores.
    scored.storedByNetwork.set(network, { created: row.created, ts: reanchor ? Math.max(row.ts, clockTs) : row.ts });
    scored.updates.push({
      id: row.id,
      score,
      reanchor,
      members: aggregates.length,
      events: aggregates.reduce((sum, a) => sum + a.events, 0),
      sources: [...new Set([...entry.values()].flatMap((c) => c.sources))],
      notes: [...entry.values()].flatMap((c) => c.notes),
    });
  }
  return scored;
}

/**
 * The shared rule decides whether the batch moves the clock (a new indicator, a new reporting
 * organization, a changed score); the second it moves to is the feed clock's, taken in the
 * batch's first statement (anchorTs never moves backwards, and the feed clock never runs behind
 * an earlier anchor).
 */
function movesClock(row: LockedRow, entry: Map<number, Contribution>, previousTs: number | null, previousOrgs: string[], scores: { before: number; after: number }, rules: IngestRules): boolean {
  return (
    row.created ||
    [...entry.keys()].some((org) => rules.anchor(previousTs, previousOrgs, String(org), Number.MAX_SAFE_INTEGER, scores) !== previousTs) ||
    // A new source can make an organization's blocking rule match: that too is delivered.
    [...entry.values()].some((c) => c.sources.some((source) => !row.sources.includes(source)))
  );
}

/**
 * One statement: the merged report rows and the indicators' new figures (entry_ts was set when
 * the row was inserted). For a row inserted by this batch no indexed column changes (ts is
 * already greatest(ts, clock), change_xid is this transaction's), so PostgreSQL can update it in
 * place (HOT).
 */
async function writeScores(tx: Transaction, scored: Scored, clockTs: number): Promise<void> {
  await tx.query(
    `with reports as (
       insert into ipv4_reports (indicator_id, org_id, confidence, events, first_ts, last_ts, sources)
       select u.id, u.org_id, u.confidence, u.events, u.ts, u.ts, u.sources
       from jsonb_to_recordset($1::jsonb) as u(id bigint, org_id bigint, confidence double precision, events integer, ts bigint, sources text[])
       order by u.id, u.org_id
       on conflict (indicator_id, org_id) do update set
         confidence = excluded.confidence,
         events = ipv4_reports.events + excluded.events,
         last_ts = excluded.last_ts,
         sources = array(select distinct s from unnest(ipv4_reports.sources || excluded.sources) as s order by s limit 32)
     )
     update ipv4_indicators i set
       score = u.score,
       ts = case when u.reanchor then greatest(i.ts, $3::bigint) else i.ts end,
       members = u.members,
       events = u.events,
       sources = array(select distinct s from unnest(i.sources || u.sources) as s order by s limit 32),
       notes = (i.notes || u.notes)[greatest(1, cardinality(i.notes || u.notes) - 19):],
       updated_at = now()
     from jsonb_to_recordset($2::jsonb) as u(id bigint, score integer, reanchor boolean, members integer, events integer, sources text[], notes text[])
     where i.id = u.id`,
    [json(scored.reportRows), json(scored.updates), clockTs],
    { name: 'rampart_ipv4_ingest_write' },
  );
}

/** Where a batch has got to, for the batcher's scheduling and its phase timings. */
export interface IngestProgress {
  /** The transaction is open (its connection taken, BEGIN answered). */
  begun?(): void;
  /** The first statement answered: rows locked or inserted, reserved items found. */
  locked?(): void;
  /** Every statement ran and only the COMMIT is left (the batcher starts the next batch then). */
  committing?(): void;
}

/**
 * Each decision row is also its organization's record of the value while nobody reports it
 * (migration 0017): its `ts` moves to the batch's second on every change, a clear keeps the row
 * (-1) so the feed delivers it once more, and a new row takes the gid of the indicator or of
 * another organization's decision record at that network, so one network has one gid.
 */
async function upsertDecisions(tx: Transaction, items: Ipv4ReportItem[], clockTs: number): Promise<IngestResult['decisions']> {
  const latest = new Map<string, IngestResult['decisions'][number] & { gid: string; reason: string | null; setBy: string | null }>();
  for (const item of items) {
    if (!item.decision) continue;
    const { value, ttl, reason, setBy } = item.decision;
    latest.set(`${item.orgId} ${item.network}`, { orgId: item.orgId, network: item.network, decision: value, ttl, gid: item.gid, reason: reason ?? null, setBy: setBy ?? null });
  }
  if (latest.size === 0) return [];
  const rows = [...latest.values()].sort((a, b) => a.orgId - b.orgId || (a.network < b.network ? -1 : a.network > b.network ? 1 : 0));
  await tx.query(
    `insert into ipv4_decisions (org_id, network, decision, ttl, reason, set_by, id, gid, ts)
     select u.org_id, u.network, u.decision, u.ttl, u.reason, u.set_by, nextval('ipv4_indicators_id_seq'),
       coalesce((select i.gid from ipv4_indicators i where i.network = u.network),
                (select x.gid from ipv4_decisions x where x.network = u.network order by x.id limit 1), u.gid),
       $2::bigint
     from jsonb_to_recordset($1::jsonb) as u(org_id bigint, network cidr, decision smallint, ttl bigint, gid text, reason text, set_by text)
     order by u.org_id, u.network
     on conflict (org_id, network) do update set decision = excluded.decision, ttl = excluded.ttl, reason = excluded.reason, set_by = excluded.set_by, ts = excluded.ts, updated_at = now()`,
    [json(rows.map((r) => ({ org_id: r.orgId, network: r.network, decision: r.decision, ttl: r.ttl, gid: r.gid, reason: r.reason, set_by: r.setBy }))), clockTs],
  );
  return rows.map(({ gid: _gid, reason: _reason, setBy: _setBy, ...r }) => r);
}

/**
 * Delivers again, to the deciding organization only, every held record a decision covers
 * (`network <<= decision`): an anchor row (migration 0011) at the batch's second carrying the
 * live score there, computed from the pair that organization saw until now. A record the batch
 * also reports and re-anchors for everyone gets the same second, and its own pair wins.
 */
async function anchorDecided(tx: Transaction, decisions: IngestResult['decisions'], clockTs: number, rules: Pick<IngestRules, 'reanchoredScore'>): Promise<number> {
  const covered = await tx.query<{ org_id: number; id: number; ts: number; score: number }>(
    `select distinct on (d.org_id, i.id) d.org_id, i.id, coalesce(a.ts, i.ts) as ts, coalesce(a.score, i.score) as score
     from jsonb_to_recordset($1::jsonb) as d(org_id bigint, network cidr)
     join ipv4_indicators i on i.network <<= d.network
     left join ipv4_org_anchors a on a.org_id = d.org_id and a.indicator_id = i.id and a.ts > i.ts
     order by d.org_id, i.id`,
    [json(decisions.map((d) => ({ org_id: d.orgId, network: d.network })))],
  );
  return writeAnchors(tx, covered.rows, clockTs, rules);
}

/** Upserts anchors at `clockTs` for rows given with the (ts, score) their organization saw; in key order. */
async function writeAnchors(
  tx: Transaction,
  rows: Array<{ org_id: number; id: number; ts: number; score: number }>,
  clockTs: number,
  rules: Pick<IngestRules, 'reanchoredScore'>,
): Promise<number> {
  const anchors = rows
    .filter((r) => Number(r.ts) < clockTs)
    .map((r) => ({ org_id: Number(r.org_id), id: Number(r.id), score: rules.reanchoredScore(r.score, clockTs - Number(r.ts)) }));
  if (anchors.length === 0) return 0;
  await tx.query(
    `insert into ipv4_org_anchors (org_id, indicator_id, ts, score)
     select u.org_id, u.id, $2, u.score from jsonb_to_recordset($1::jsonb) as u(org_id bigint, id bigint, score integer)
     order by u.org_id, u.id
     on conflict (org_id, indicator_id) do update set ts = excluded.ts, score = excluded.score`,
    [json(anchors), clockTs],
  );
  return anchors.length;
}

/**
 * A second for records written outside a report batch (the same protocol as the batch's first
 * statement): a shared advisory lock on the current second, held until the transaction ends, then
 * the clock read again, so feed readers stop before it until this transaction commits.
 */
async function takeIpv4FeedSecond(tx: Transaction): Promise<number> {
  const res = await tx.query<{ ts: number }>(
    `select floor(extract(epoch from clock_timestamp()))::bigint as ts
     from (select floor(extract(epoch from clock_timestamp()))::bigint as s) as x
     cross join lateral pg_advisory_xact_lock_shared($1::bigint * 4294967296 + x.s) as lock`,
    [IPV4_FEED_LOCK_CLASS],
  );
  return Number(res.rows[0]!.ts);
}

/** The held records an organization's policy change touches (services decide which). */
export interface PolicyChangeScope {
  /** Reserved ranges added or removed: records overlapping one of them. */
  ranges: string[];
  /** Tags of the blocking rule before or after, when it changed: records carrying one (as tag or source). */
  ruleTags: string[];
}

/**
 * Delivers again, to `orgId` only, every held record its policy change touches (migration 0011),
 * inside the transaction that changes the policy. Returns how many records it re-anchored.
 */
export async function anchorPolicyChange(tx: Transaction, orgId: number, scope: PolicyChangeScope, rules: Pick<IngestRules, 'reanchoredScore'>): Promise<number> {
  if (scope.ranges.length === 0 && scope.ruleTags.length === 0) return 0;
  const clockTs = await takeIpv4FeedSecond(tx);
  // The organization's decision records overlapping a changed range are delivered again too.
  if (scope.ranges.length > 0) {
    await tx.query(`update ipv4_decisions set ts = $3 where org_id = $1 and network::inet && any($2::text[]::inet[]) and ts < $3`, [orgId, scope.ranges, clockTs]);
  }
  const touched = await tx.query<{ org_id: number; id: number; ts: number; score: number }>(
    `select $1::bigint as org_id, i.id, coalesce(a.ts, i.ts) as ts, coalesce(a.score, i.score) as score
     from ipv4_indicators i
     left join ipv4_org_anchors a on a.org_id = $1 and a.indicator_id = i.id and a.ts > i.ts
     where (cardinality($2::text[]) > 0 and i.network::inet && any($2::text[]::inet[]))
        or (cardinality($3::text[]) > 0 and (i.tags && $3::text[] or i.sources && $3::text[]))
     order by i.id`,
    [orgId, scope.ranges, scope.ruleTags],
  );
  return writeAnchors(tx, touched.rows, clockTs, rules);
}
