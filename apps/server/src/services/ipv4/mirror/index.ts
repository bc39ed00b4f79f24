import { formatIpv4 } from '@rampart/contracts';
import type { Ipv4ListFilter, Ipv4Row, MirrorDetailRow } from '../../../store/index.ts';
import { LookupBatcher } from '../../../store/lookup-batcher.ts';
import { AddressIndex } from './address-index.ts';
import { columnBytes, emptyColumns, positionOf, span } from './columns.ts';
import { MirrorFacts, type OfflineFacts } from './facts.ts';
import { planOf, type MirrorPlan } from './listing.ts';
import { applyChanges, loadTables, type MirrorRows, type MirrorTables } from './loader.ts';
import { AllDecisions, type MirrorDecision } from './org-decisions.ts';
import { listedVersion, VersionSum, writeAddresses, writeCsv, type MirrorPage, type MirrorText } from './renderer.ts';

export type { OfflineFacts } from './facts.ts';
export type { MirrorPlan } from './listing.ts';
export type { MirrorPage, MirrorText } from './renderer.ts';

export type MirrorState = 'idle' | 'loading' | 'ready' | 'failed' | 'closed';

export interface MirrorLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

function emptyTables(): MirrorTables {
  const cols = emptyColumns(0);
  return { cols, index: new AddressIndex(cols), decisions: new AllDecisions(), anchors: new Map(), epoch: '', since: { xmax: '0', xip: [] } };
}

/**
 * An in-memory, columnar copy of what the plain-text IPv4 lists and the look-ups read from ipv4_indicators
 * (typed arrays in id order, columns.ts) and of every organization's IPv4 decisions
 * (org-decisions.ts), for one server process. It is loaded in the background (loader.ts); until
 * it is ready (and whenever it failed) the lists read SQL. Before each list request it catches
 * up with every committed change in one query (`catchUp`, change tracking of migration 0009), so
 * a list never misses a write acknowledged before the request, whichever connection or replica
 * wrote it. Which rows a list holds is listing.ts (the twin of SQL's `listWhere`); how they are
 * written, renderer.ts. Look-ups (`holding`) find the rows holding an address through
 * address-index.ts and follow their own freshness rule (`freshForLookup`).
 */
export class Ipv4Mirror {
  private tables: MirrorTables = emptyTables();
  private readonly facts: MirrorFacts;
  private stateValue: MirrorState = 'idle';
  private loading: Promise<void> | null = null;
  /** The catch-up running now, and the one queued behind it (shared by every caller that waits). */
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  /**
   * When the newest finished catch-up started (Date.now() and performance.now()): it saw every
   * change committed before then.
   */
  private caughtUpWall = Number.NEGATIVE_INFINITY;
  private caughtUpMono = Number.NEGATIVE_INFINITY;
  /** performance.now() when this replica last acknowledged a write (noteWrite). */
  private lastWrite = Number.NEGATIVE_INFINITY;
  /**
   * What a look-up's record holds beside the columns (gid, entry_ts, sources, notes, tags,
   * ip_info), by indicator id: read from SQL on first use, dropped when a catch-up brings the row
   * (or its deletion), at most `detailsMax` of them.
   */
  private readonly details = new Map<number, MirrorDetailRow>();
  private readonly detailsMax: number;
  /** Counts the catch-ups that wrote or deleted rows: details read across one are not kept. */
  private generation = 0;
  /**
   * Counts every change of what the lists read: a load, a catch-up that brought anything (rows,
   * deletions, decisions, anchors), a failure. Rendered list bodies are kept per value of it
   * (services/list-body-cache.ts).
   */
  private listGen = 0;
  private readonly detailReads: LookupBatcher<number, MirrorDetailRow | null>;

  constructor(
    private readonly rows: MirrorRows,
    offline: OfflineFacts,
    private readonly log?: MirrorLog,
    options: { detailsMax?: number } = {},
  ) {
    this.facts = new MirrorFacts(offline);
    this.detailsMax = options.detailsMax ?? 50_000;
    this.detailReads = new LookupBatcher({ id: String, run: (ids) => this.rows.details(ids) });
  }

  get state(): MirrorState {
    return this.stateValue;
  }

  /** A getter, not a narrowed field: close() may run during any await. */
  private get closed(): boolean {
    return this.stateValue === 'closed';
  }

  /** The generation of the list data (`listGen`): equal values, equal lists for equal filters. */
  get listGeneration(): number {
    return this.listGen;
  }

  get ready(): boolean {
    return this.stateValue === 'ready';
  }

  get size(): number {
    return this.tables.cols.n;
  }

  /** Bytes held by the columns (the arrays' full capacity). */
  get bytes(): number {
    return columnBytes(this.tables.cols);
  }

  /** Starts the load once; resolves when it ended (ready or failed, never rejects). */
  start(): Promise<void> {
    this.loading ??= this.load();
    return this.loading;
  }

  close(): void {
    this.loading ??= Promise.resolve();
    this.stateValue = 'closed';
    this.tables = emptyTables();
    this.details.clear();
  }

  private async load(): Promise<void> {
    this.stateValue = 'loading';
    const t0 = performance.now();
    try {
      const tables = await loadTables(this.rows, this.facts, () => this.closed);
      if (!tables || this.closed) return;
      const wall = Date.now();
      const mono = performance.now();
      applyChanges(tables, this.facts, await this.rows.changesSince(tables.since));
      if (this.closed) return;
      this.tables = tables;
      this.details.clear();
      this.generation++;
      this.listGen++;
      this.caughtUpWall = wall;
      this.caughtUpMono = mono;
      this.stateValue = 'ready';
      this.log?.info({ rows: tables.cols.n, mb: Math.round(this.bytes / 1e5) / 10, ms: Math.round(performance.now() - t0) }, 'ipv4 list mirror loaded');
    } catch (err) {
      if (this.closed) return;
      this.stateValue = 'failed';
      this.tables = emptyTables();
      this.details.clear();
      this.log?.warn({ err }, 'ipv4 list mirror failed: lists read SQL');
    }
  }

  /**
   * Brings the mirror up to every change committed before this call: waits for a catch-up that
   * starts after the call (one running already may have read its snapshot too early).
   */
  catchUp(): Promise<void> {
    if (!this.running) {
      this.running = this.runCatchUp().finally(() => {
        this.running = null;
      });
      return this.running;
    }
    this.queued ??= this.running.then(
      () => this.catchUpNow(),
      () => this.catchUpNow(),
    );
    return this.queued;
  }

  private catchUpNow(): Promise<void> {
    this.queued = null;
    return this.catchUp();
  }

  private async runCatchUp(): Promise<void> {
    if (this.stateValue !== 'ready') return;
    const wall = Date.now();
    const mono = performance.now();
    try {
      const changes = await this.rows.changesSince(this.tables.since);
      if (this.closed) return;
      const touched = applyChanges(this.tables, this.facts, changes);
      if (touched.length > 0 || changes.decisions?.length || changes.anchors?.length || changes.deleted?.length) this.listGen++;
      if (touched.length > 0) {
        this.generation++;
        for (const id of touched) this.details.delete(id);
      }
      // Catch-ups run one after the other: this one started after every earlier one.
      this.caughtUpWall = wall;
      this.caughtUpMono = mono;
    } catch (err) {
      if (this.stateValue !== 'ready') return;
      // A mirror that may have missed a change must not answer again: lists read SQL while it
      // loads anew.
      this.stateValue = 'failed';
      this.tables = emptyTables();
      this.details.clear();
      this.listGen++;
      this.log?.warn({ err }, 'ipv4 list mirror could not catch up: lists read SQL while it reloads');
      this.loading = this.load();
    }
  }

  /** This replica acknowledged a write (a report, a decision, …): the next look-ups wait for a catch-up. */
  noteWrite(): void {
    this.lastWrite = performance.now();
  }

  /**
   * THE FRESHNESS RULE of look-ups answered by the mirror (docs/indicators.md, "GET /ips/{ip} from the IPv4 mirror"): a look-up is
   * answered from a catch-up that started (a) within the current wall-clock second, and (b) after
   * the last write this replica acknowledged (noteWrite). (a) is the feed's own freshness: a
   * report is in the `/ips` feed once its second is settled, and in every look-up from the next
   * second on, whichever replica took it; at most one catch-up a second serves all look-ups
   * (shared by the callers that wait for it). (b) makes a caller's own write (and any other this
   * replica acknowledged) visible to its next look-up on this replica. Null: fresh enough now.
   */
  private freshForLookup(): Promise<void> | null {
    const now = Date.now();
    // A catch-up "in the future" means the clock was set back: it does not count.
    if (this.caughtUpMono > this.lastWrite && this.caughtUpWall >= now - (now % 1000) && this.caughtUpWall <= now) return null;
    return this.catchUp();
  }

  /**
   * `Ipv4Lookup.holding` from the mirror: the records holding `addr`, most specific first, each
   * as organization `orgId` sees it (its anchor, its most specific decision), after the catch-up
   * the freshness rule asks for. Null when the mirror cannot answer (not ready, failed, or behind
   * a deletion it has not caught up with yet): SQL answers. Without a promise when no catch-up
   * is due and every row's details are held (most look-ups): the caller's promise and microtasks
   * are most of the work of such a look-up.
   */
  holding(orgId: number, addr: number): Ipv4Row[] | null | Promise<Ipv4Row[] | null> {
    const fresh = this.freshForLookup();
    return fresh ? fresh.then(() => this.holdingNow(orgId, addr)) : this.holdingNow(orgId, addr);
  }

  /** `holding` once the freshness rule is met. */
  private holdingNow(orgId: number, addr: number): Ipv4Row[] | null | Promise<Ipv4Row[] | null> {
    if (this.stateValue !== 'ready') return null;
    const { cols, index, anchors, decisions } = this.tables;
    const rows: Ipv4Row[] = [];
    const own = anchors.get(orgId);
    const org = decisions.of(orgId);
    const decide = org && org.byNetwork.size > 0 ? org.lookup() : null;
    index.candidates(addr, (id, net, len) => {
      const i = positionOf(cols, id);
      if (i < 0 || cols.addr[i] !== net || cols.len[i] !== len) return;
      let ts = cols.ts[i]!;
      let score = cols.score[i]!;
      const anchor = own?.get(id);
      if (anchor && anchor.ts > ts) {
        ts = anchor.ts;
        score = anchor.score;
      }
      const d = decide?.(net, len);
      // The details are filled in below; the order of keys is SQL's (HOLDING_MANY).
      rows.push({
        id,
        gid: '',
        network: `${formatIpv4(net)}/${len}`,
        is_network: false,
        score,
        ts,
        entry_ts: 0,
        members: cols.members[i]!,
        events: cols.events[i]!,
        sources: [],
        notes: [],
        tags: [],
        ip_info: null,
        decision: d ? d.decision : null,
        ttl: d ? d.ttl : null,
      });
    });
    // A decision on a value nobody reported is a record of its own, which only SQL holds (migration 0017).
    if (org && this.unheldDecision(org.byNetwork.values(), (d) => d.decision !== -1 && d.addr <= addr && addr <= d.addr + 2 ** (32 - d.len) - 1)) return null;
    let missing: number[] | null = null;
    for (const row of rows) if (!this.details.has(row.id)) (missing ??= []).push(row.id);
    if (missing) return this.withReadDetails(rows, missing);
    return rows.map((row) => withDetails(row, this.details.get(row.id)!));
  }

  /** The rows of a look-up once the details it lacks are read from SQL (and kept). */
  private async withReadDetails(rows: Ipv4Row[], missing: number[]): Promise<Ipv4Row[] | null> {
    const generation = this.generation;
    const read = await Promise.all(missing.map((id) => this.detailReads.load(id)));
    if (this.stateValue !== 'ready') return null;
    // Gone from SQL while the mirror still holds it: the mirror is behind, SQL answers.
    if (read.some((d) => d === null)) return null;
    for (const d of read as MirrorDetailRow[]) {
      // Read across a catch-up that changed rows: maybe older than it, so not kept.
      if (generation !== this.generation) break;
      if (this.details.size >= this.detailsMax) this.details.delete(this.details.keys().next().value!);
      this.details.set(Number(d.id), d);
    }
    if (generation !== this.generation) {
      const byId = new Map((read as MirrorDetailRow[]).map((d) => [Number(d.id), d]));
      return rows.map((row) => withDetails(row, this.details.get(row.id) ?? byId.get(row.id)!));
    }
    return rows.map((row) => withDetails(row, this.details.get(row.id)!));
  }

  /** The decisions version of an organization, as `Ipv4Store.decisionsVersion` returns it. */
  decisionsVersion(orgId: number): { count: number; changed: string } {
    const { decisions, epoch } = this.tables;
    return decisions.of(orgId)?.version(epoch) ?? { count: 0, changed: epoch };
  }

  /** What a list filter selects, for the mirror; null when only SQL can evaluate it. */
  plan(filter: Ipv4ListFilter): MirrorPlan | null {
    const org = this.tables.decisions.of(filter.orgId);
    // A blacklist in force on a value nobody reported is an entry of its own, which only SQL lists (migration 0017).
    if (org && filter.hasDecisions && this.unheldDecision(org.byNetwork.values(), (d) => d.decision === 1 && (d.ttl === null || d.ttl > filter.now))) return null;
    return planOf(filter, org, this.tables.anchors.get(filter.orgId));
  }

  /** Whether one of `decisions` that `wanted` picks names a network no indicator row is. */
  private unheldDecision(decisions: Iterable<MirrorDecision>, wanted: (d: MirrorDecision) => boolean): boolean {
    const { cols, index } = this.tables;
    for (const d of decisions) {
      if (!wanted(d)) continue;
      let held = false;
      index.candidates(d.addr, (id, net, len) => {
        const i = net === d.addr && len === d.len ? positionOf(cols, id) : -1;
        if (i >= 0 && cols.addr[i] === net && cols.len[i] === len) held = true;
      });
      if (!held) return true;
    }
    return false;
  }

  /** `Ipv4Store.listVersion` over the mirror. */
  version(plan: MirrorPlan, after: number | null, upTo: number | null): string {
    const [start, end] = span(this.tables.cols, after, upTo);
    return listedVersion(this.tables.cols, plan, start, end);
  }

  /** Up to `limit` listed rows with after < id <= upTo written as address-list entries (renderer.ts). */
  addressText(plan: MirrorPlan, after: number | null, upTo: number | null, limit: number, format: 'lines' | 'comma', first: boolean): MirrorText {
    const [start, end] = span(this.tables.cols, after, upTo);
    const { text, last, count } = writeAddresses(this.tables.cols, plan, start, end, limit, format, first, null);
    return { text, last, count };
  }

  /**
   * A whole page of an address list in one pass: its last id, whether more follow and its
   * version (what `Ipv4Store.listBoundary` gives), with its text, starting a response.
   */
  addressPage(plan: MirrorPlan, after: number | null, n: number, format: 'lines' | 'comma'): MirrorPage & { text: Buffer } {
    const [start, end] = span(this.tables.cols, after, null);
    const v = new VersionSum();
    const { text, last, next } = writeAddresses(this.tables.cols, plan, start, end, n, format, true, v);
    return { text, last, more: next < end, version: v.text() };
  }

  /** Up to `limit` listed rows with after < id <= upTo written as `/flat` CSV lines, LiveScore at `plan.now`. */
  csvText(plan: MirrorPlan, after: number | null, upTo: number | null, limit: number): MirrorText {
    const [start, end] = span(this.tables.cols, after, upTo);
    return writeCsv(this.tables.cols, this.facts, plan, start, end, limit);
  }
}

/** A look-up row with the detail columns of its indicator. */
function withDetails(row: Ipv4Row, d: MirrorDetailRow): Ipv4Row {
  row.gid = d.gid;
  row.is_network = d.is_network;
  row.entry_ts = d.entry_ts;
  row.sources = d.sources;
  row.notes = d.notes;
  row.tags = d.tags;
  row.ip_info = d.ip_info;
  return row;
}
