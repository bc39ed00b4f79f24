import type { Ipv4ListFilter } from '../../store/index.ts';
import { columnBytes, emptyColumns, span } from './columns.ts';
import { MirrorFacts, type OfflineFacts } from './facts.ts';
import { planOf, type MirrorPlan } from './listing.ts';
import { applyChanges, loadTables, type MirrorRows, type MirrorTables } from './loader.ts';
import { AllDecisions } from './org-decisions.ts';
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
  return { cols: emptyColumns(0), decisions: new AllDecisions(), anchors: new Map(), epoch: '', since: { xmax: '0', xip: [] } };
}

/**
 * An in-memory, columnar copy of what the plain-text IPv4 lists read from ipv4_indicators
 * (typed arrays in id order, columns.ts) and of every organization's IPv4 decisions
 * (org-decisions.ts), for one server process. It is loaded in the background (loader.ts); until
 * it is ready (and whenever it failed) the lists read SQL. Before each list request it catches
 * up with every committed change in one query (`catchUp`, change tracking of migration 0009), so
 * a list never misses a write acknowledged before the request, whichever connection or replica
 * wrote it. Which rows a list holds is listing.ts (the twin of SQL's `listWhere`); how they are
 * written, renderer.ts.
 */
export class Ipv4Mirror {
  private tables: MirrorTables = emptyTables();
  private readonly facts: MirrorFacts;
  private stateValue: MirrorState = 'idle';
  private loading: Promise<void> | null = null;
  /** The catch-up running now, and the one queued behind it (shared by every caller that waits). */
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(
    private readonly rows: MirrorRows,
    offline: OfflineFacts,
    private readonly log?: MirrorLog,
  ) {
    this.facts = new MirrorFacts(offline);
  }

  get state(): MirrorState {
    return this.stateValue;
  }

  /** A getter, not a narrowed field: close() may run during any await. */
  private get closed(): boolean {
    return this.stateValue === 'closed';
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
  }

  private async load(): Promise<void> {
    this.stateValue = 'loading';
    const t0 = performance.now();
    try {
      const tables = await loadTables(this.rows, this.facts, () => this.closed);
      if (!tables || this.closed) return;
      applyChanges(tables, this.facts, await this.rows.changesSince(tables.since));
      if (this.closed) return;
      this.tables = tables;
      this.stateValue = 'ready';
      this.log?.info({ rows: tables.cols.n, mb: Math.round(this.bytes / 1e5) / 10, ms: Math.round(performance.now() - t0) }, 'ipv4 list mirror loaded');
    } catch (err) {
      if (this.closed) return;
      this.stateValue = 'failed';
      this.tables = emptyTables();
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
    try {
      const changes = await this.rows.changesSince(this.tables.since);
      if (this.closed) return;
      applyChanges(this.tables, this.facts, changes);
    } catch (err) {
      if (this.stateValue !== 'ready') return;
      // A mirror that may have missed a change must not answer again: lists read SQL while it
      // loads anew.
      this.stateValue = 'failed';
      this.tables = emptyTables();
      this.log?.warn({ err }, 'ipv4 list mirror could not catch up: lists read SQL while it reloads');
      this.loading = this.load();
    }
  }

  /** The decisions version of an organization, as `Ipv4Store.decisionsVersion` returns it. */
  decisionsVersion(orgId: number): { count: number; changed: string } {
    const { decisions, epoch } = this.tables;
    return decisions.of(orgId)?.version(epoch) ?? { count: 0, changed: epoch };
  }

  /** What a list filter selects, for the mirror; null when only SQL can evaluate it. */
  plan(filter: Ipv4ListFilter): MirrorPlan | null {
    return planOf(filter, this.tables.decisions.of(filter.orgId), this.tables.anchors.get(filter.orgId));
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
