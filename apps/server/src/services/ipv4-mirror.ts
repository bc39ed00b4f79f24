import {
  ROW_BYTES,
  type MirrorRowsStore,
  type AsInfoRow,
  type MirrorAnchorRow,
  type MirrorChanges,
  type MirrorDecisionRow,
  type MirrorSince,
} from '../store/ipv4-list-mirror.ts';
import type { Ipv4ListFilter } from '../store/ipv4.ts';
import { liveScore } from '@rampart/scoring';
import type { Enrichment } from './enrichment.ts';
import { parseIpv4 } from '@rampart/contracts';
import { ByteWriter, floorSeconds } from './list-bytes.ts';
import { csvField } from './text-list.ts';

/**
 * Rows per query of the initial load: under 1 MB of packed rows (2 MB as hex text) at a time, so
 * the load leaves little garbage and no large driver buffers behind.
 */
const LOAD_CHUNK = 16_384;

interface MirrorDecision {
  addr: number;
  len: number;
  decision: number;
  ttl: number | null;
  micros: number;
  changed: string;
}

/** One organization's decisions, indexed by prefix length (most specific first) for look-ups. */
class OrgDecisions {
  readonly byNetwork = new Map<string, MirrorDecision>();
  private index: Array<{ len: number; mask: number; map: Map<number, MirrorDecision> }> | null = null;
  private latest: MirrorDecision | null | undefined;

  set(network: string, d: MirrorDecision): void {
    this.byNetwork.set(network, d);
    this.index = null;
    this.latest = undefined;
  }

  delete(network: string): void {
    if (this.byNetwork.delete(network)) {
      this.index = null;
      this.latest = undefined;
    }
  }

  /** What `Ipv4Store.decisionsVersion` returns for the organization. */
  version(epoch: string): { count: number; changed: string } {
    if (this.latest === undefined) {
      this.latest = null;
      for (const d of this.byNetwork.values()) if (!this.latest || d.micros > this.latest.micros) this.latest = d;
    }
    return { count: this.byNetwork.size, changed: this.latest?.changed ?? epoch };
  }

  /** The most specific decision whose network contains (or is) addr/len. */
  lookup(): (addr: number, len: number) => MirrorDecision | undefined {
    if (!this.index) {
      const groups = new Map<number, Map<number, MirrorDecision>>();
      for (const d of this.byNetwork.values()) {
        let m = groups.get(d.len);
        if (!m) groups.set(d.len, (m = new Map()));
        m.set(d.addr, d);
      }
      this.index = [...groups.entries()].sort((a, b) => b[0] - a[0]).map(([len, map]) => ({ len, mask: len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0, map }));
    }
    const index = this.index;
    return (addr, len) => {
      for (const g of index) {
        if (g.len > len) continue;
        const d = g.map.get((addr & g.mask) >>> 0);
        if (d) return d;
      }
      return undefined;
    };
  }
}

/** An organization's (ts, score) for one indicator (migration 0011). */
interface Anchor {
  ts: number;
  score: number;
}

/** Parses canonical IPv4 CIDR text ("a.b.c.d/n"). */
function parseCidr(network: string): { addr: number; len: number } | null {
  const r = parseIpv4(network);
  return r ? { addr: r.start, len: r.prefix } : null;
}

/** The columns, in id order; `n` rows are used, the arrays may be longer (room to grow). */
interface Columns {
  n: number;
  id: Float64Array;
  addr: Uint32Array;
  len: Uint8Array;
  score: Uint16Array;
  /** Seconds since 1970, unsigned: good until 2106 (a signed column broke on 2038-01-19). */
  ts: Uint32Array;
  members: Int32Array;
  events: Int32Array;
  /** updated_at in epoch microseconds. */
  updated: Float64Array;
  /** Index into the interned AS facts (0: none): ip_info's, completed from the offline data. */
  as: Uint32Array;
  /** Index into the CDN names (0: none) of the network's first address. */
  cdn: Uint16Array;
}

const COLUMN_TYPES = {
  id: Float64Array,
  addr: Uint32Array,
  len: Uint8Array,
  score: Uint16Array,
  ts: Uint32Array,
  members: Int32Array,
  events: Int32Array,
  updated: Float64Array,
  as: Uint32Array,
  cdn: Uint16Array,
} as const;
type ColumnName = keyof typeof COLUMN_TYPES;
const COLUMN_NAMES = Object.keys(COLUMN_TYPES) as ColumnName[];

function emptyColumns(capacity: number): Columns {
  const c = { n: 0 } as Columns;
  for (const name of COLUMN_NAMES) (c as unknown as Record<string, unknown>)[name] = new COLUMN_TYPES[name](capacity);
  return c;
}

/** One decoded packed row, with its AS and CDN indexes once resolved. */
interface PackedRow {
  id: number;
  addr: number;
  len: number;
  score: number;
  ts: number;
  members: number;
  events: number;
  updated: number;
  as: number;
  cdn: number;
}

/** The offline facts a `/flat` CSV line holds beside ip_info's: `Enrichment`'s numeric look-ups. */
export type OfflineFacts = Pick<Enrichment, 'asnOfNumber' | 'cdnOfNumber'>;

/**
 * Interned CSV texts, written side by side in one arena: copying from it stays within a few
 * cache lines.
 */
class CsvInterned {
  private arena = new Uint8Array(1024);
  /** Text k at [bounds[2k], bounds[2k + 1]). */
  private bounds = new Uint32Array(128);
  private readonly index = new Map<string, number>();

  /** Index of `csv`, added the first time. */
  intern(csv: string): number {
    let k = this.index.get(csv);
    if (k === undefined) {
      k = this.index.size;
      this.add(k, Buffer.from(csv));
      this.index.set(csv, k);
    }
    return k;
  }

  private add(k: number, bytes: Uint8Array): void {
    const start = k === 0 ? 0 : this.bounds[2 * k - 1]!;
    if (2 * k + 2 > this.bounds.length) this.bounds = grow(this.bounds, 2 * k + 2);
    if (start + bytes.length > this.arena.length) this.arena = grow(this.arena, start + bytes.length);
    this.arena.set(bytes, start);
    this.bounds[2 * k] = start;
    this.bounds[2 * k + 1] = start + bytes.length;
  }

  /** Writes text k. */
  write(w: ByteWriter, k: number): void {
    w.range(this.arena, this.bounds[2 * k]!, this.bounds[2 * k + 1]!);
  }
}

/** A copy of `a` with room for at least `need` elements (doubling). */
function grow<T extends Uint8Array | Uint32Array>(a: T, need: number): T {
  const out = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2));
  out.set(a);
  return out;
}

/** timestamptz_send counts microseconds from 2000-01-01. */
const PG_EPOCH_MICROS = 946_684_800_000_000;
const TWO_32 = 4_294_967_296;

/** Decodes the row at byte `at` (layout: store/ipv4-list-mirror.ts); throws on what the mirror cannot hold. */
function readRow(view: DataView, at: number, out: PackedRow): void {
  out.id = view.getInt32(at) * TWO_32 + view.getUint32(at + 4);
  // cidr_send: family (2 = IPv4), bits, is_cidr, address length.
  if (view.getUint8(at + 8) !== 2 || view.getUint8(at + 11) !== 4) throw new Error('ipv4_indicators holds a non-IPv4 network: lists read SQL');
  out.len = view.getUint8(at + 9);
  out.addr = view.getUint32(at + 12);
  out.score = view.getInt16(at + 16);
  const tsHigh = view.getInt32(at + 18);
  out.ts = tsHigh * TWO_32 + view.getUint32(at + 22);
  if (out.ts < 0 || out.ts > 0xffff_ffff) throw new Error(`ipv4 indicator ts ${out.ts} does not fit the mirror: lists read SQL`);
  out.members = view.getInt32(at + 26);
  out.events = view.getInt32(at + 30);
  out.updated = view.getInt32(at + 34) * TWO_32 + view.getUint32(at + 38) + PG_EPOCH_MICROS;
}

/** A page of a list as the mirror computed it: the figures `Ipv4Store.listBoundary` returns. */
export interface MirrorPage {
  last: number | null;
  more: boolean;
  version: string;
}

/** What one request lists: the filter of `ipv4ListFilter`, reduced to what the mirror evaluates. */
export interface MirrorPlan {
  now: number;
  /** The organization's delay: rows whose ts (its anchor's when newer) is later are not listed. */
  visibleUpTo: number;
  cutoffs: Float64Array;
  ranges: Array<{ start: number; end: number }>;
  decision: ((addr: number, len: number) => MirrorDecision | undefined) | null;
  /** The organization's anchors by indicator id (ts, score), in force while newer than the row's ts. */
  anchors: Map<number, Anchor> | null;
}

export type MirrorState = 'idle' | 'loading' | 'ready' | 'failed' | 'closed';

export interface MirrorLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * An in-memory, columnar copy of what the plain-text IPv4 lists read from ipv4_indicators
 * (typed arrays in id order) and of every organization's IPv4 decisions, for one server
 * process. It is loaded in the background; until it is ready (and whenever it failed) the lists
 * read SQL. Before each list request it catches up with every committed change in one query
 * (`catchUp`, change tracking of migration 0009), so a list never misses a write acknowledged
 * before the request, whichever connection or replica wrote it.
 */
export class Ipv4Mirror {
  private cols: Columns = emptyColumns(0);
  private readonly orgs = new Map<number, OrgDecisions>();
  private readonly anchors = new Map<number, Map<number, Anchor>>();
  /**
   * Interned AS facts (index 0: none) as the CSV reads them: ip_info's, each missing one taken
   * from the offline data, so a list never looks an address up; written `AS name,ASN`.
   */
  private readonly asFacts = new CsvInterned();
  /** The AS facts index of each offline entry, for rows without ip_info. */
  private readonly offlineAs = new Map<object, number>();
  /** CDN names (index 0: none), written `CDN,Reverse,IS_CDN`. */
  private readonly cdnNames = new CsvInterned();
  private since: MirrorSince = { xmax: '0', xip: [] };
  private epoch = '';
  private stateValue: MirrorState = 'idle';
  private loading: Promise<void> | null = null;
  /** The catch-up running now, and the one queued behind it (shared by every caller that waits). */
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(
    private readonly rows: Pick<MirrorRowsStore, 'snapshot' | 'chunk' | 'anchors' | 'decisions' | 'changesSince'>,
    private readonly offline: OfflineFacts,
    private readonly log?: MirrorLog,
  ) {
    this.asFacts.intern(',');
    this.cdnNames.intern(',,false');
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
    return this.cols.n;
  }

  /** Bytes held by the columns (the arrays' full capacity). */
  get bytes(): number {
    return COLUMN_NAMES.reduce((sum, name) => sum + this.cols[name].byteLength, 0);
  }

  /** Starts the load once; resolves when it ended (ready or failed, never rejects). */
  start(): Promise<void> {
    this.loading ??= this.load();
    return this.loading;
  }

  close(): void {
    this.loading ??= Promise.resolve();
    this.stateValue = 'closed';
    this.cols = emptyColumns(0);
    this.orgs.clear();
    this.anchors.clear();
  }

  private async load(): Promise<void> {
    this.stateValue = 'loading';
    const t0 = performance.now();
    try {
      // Changes made while the chunks are read belong to transactions this snapshot has not
      // seen: the first catch-up reads them again.
      const snap = await this.rows.snapshot();
      this.epoch = snap.epoch;
      const decisions = await this.rows.decisions();
      const anchors = await this.rows.anchors();
      let cols = emptyColumns(snap.count + (snap.count >> 5) + 1024);
      let after = 0;
      for (;;) {
        if (this.closed) return;
        const chunk = await this.rows.chunk(after, LOAD_CHUNK);
        if (chunk.count === 0 || chunk.last === null) break;
        cols = this.append(cols, chunk.rows!, chunk.asInfo);
        after = chunk.last;
        if (chunk.count < LOAD_CHUNK) break;
      }
      if (this.closed) return;
      this.cols = this.trimmed(cols);
      this.orgs.clear();
      for (const d of decisions) this.setDecision(d);
      this.anchors.clear();
      this.setAnchors(anchors);
      this.since = snap.since;
      await this.applyChanges(await this.rows.changesSince(this.since));
      if (this.closed) return;
      this.stateValue = 'ready';
      this.log?.info({ rows: this.cols.n, mb: Math.round(this.bytes / 1e5) / 10, ms: Math.round(performance.now() - t0) }, 'ipv4 list mirror loaded');
    } catch (err) {
      if (this.closed) return;
      this.stateValue = 'failed';
      this.cols = emptyColumns(0);
      this.log?.warn({ err }, 'ipv4 list mirror failed: lists read SQL');
    }
  }

  /** Columns as long as their rows plus a thirty-second to grow into. */
  private trimmed(cols: Columns): Columns {
    const capacity = cols.n + (cols.n >> 5) + 1024;
    if (cols.id.length <= capacity) return cols;
    const out = emptyColumns(0);
    out.n = cols.n;
    for (const name of COLUMN_NAMES) {
      const grown = new COLUMN_TYPES[name](capacity);
      grown.set(cols[name].subarray(0, cols.n));
      (out as unknown as Record<string, unknown>)[name] = grown;
    }
    return out;
  }

  private ensureCapacity(cols: Columns, need: number): void {
    if (cols.id.length >= need) return;
    const capacity = Math.max(need, cols.id.length + (cols.id.length >> 3) + 1024);
    // One column at a time: at most one extra column is held during the copy.
    for (const name of COLUMN_NAMES) {
      const grown = new COLUMN_TYPES[name](capacity);
      grown.set(cols[name].subarray(0, cols.n));
      (cols as unknown as Record<string, unknown>)[name] = grown;
    }
  }

  private internAs(asName: string, asn: string): number {
    return this.asFacts.intern(`${csvField(asName)},${asn}`);
  }

  /** The AS facts of a row (`csvLine` of routes/ips/lists.ts): ip_info's, else the offline entry's. */
  private asOf(info: AsInfoRow | undefined, addr: number): number {
    const asName = info?.[1] ?? '';
    const asn = info?.[2] ?? '';
    if (asName && asn) return this.internAs(asName, asn);
    const entry = this.offline.asnOfNumber(addr);
    if (!entry) return this.internAs(asName, asn);
    if (!asName && !asn) {
      let k = this.offlineAs.get(entry);
      if (k === undefined) this.offlineAs.set(entry, (k = this.internAs(entry.name, `AS${entry.asn}`)));
      return k;
    }
    return this.internAs(asName || entry.name, asn || `AS${entry.asn}`);
  }

  private cdnOf(addr: number): number {
    const name = this.offline.cdnOfNumber(addr);
    if (!name) return 0;
    const k = this.cdnNames.intern(`${csvField(name)},,true`);
    // The column holds 16 bits: a mirror that cannot tell its CDNs apart fails over to SQL.
    if (k > 0xffff) throw new Error('more CDN names than the ipv4 list mirror holds: lists read SQL');
    return k;
  }

  /** Appends packed rows whose ids are all above the last one held (the initial load). */
  private append(cols: Columns, packed: Uint8Array, asInfo: AsInfoRow[] | null): Columns {
    const count = packed.byteLength / ROW_BYTES;
    this.ensureCapacity(cols, cols.n + count);
    const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
    const row = {} as PackedRow;
    let a = 0;
    for (let k = 0; k < count; k++) {
      readRow(view, k * ROW_BYTES, row);
      if (cols.n > 0 && row.id <= cols.id[cols.n - 1]!) throw new Error('ipv4 list mirror rows arrived out of id order');
      const info = asInfo && a < asInfo.length && Number(asInfo[a]![0]) === row.id ? asInfo[a++] : undefined;
      row.as = this.asOf(info, row.addr);
      row.cdn = this.cdnOf(row.addr);
      this.write(cols, cols.n++, row);
    }
    return cols;
  }

  private write(cols: Columns, i: number, row: PackedRow): void {
    cols.id[i] = row.id;
    cols.addr[i] = row.addr;
    cols.len[i] = row.len;
    cols.score[i] = row.score;
    cols.ts[i] = row.ts;
    cols.members[i] = row.members;
    cols.events[i] = row.events;
    cols.updated[i] = row.updated;
    cols.as[i] = row.as;
    cols.cdn[i] = row.cdn;
  }

  /** Position of the first row with id > key (n when none). */
  private upperBound(key: number): number {
    const ids = this.cols.id;
    let lo = 0;
    let hi = this.cols.n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ids[mid]! <= key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private positionOf(id: number): number {
    const i = this.upperBound(id) - 1;
    return i >= 0 && this.cols.id[i] === id ? i : -1;
  }

  private setAnchors(rows: MirrorAnchorRow[]): void {
    for (const [orgId, id, ts, score] of rows) {
      let org = this.anchors.get(Number(orgId));
      if (!org) this.anchors.set(Number(orgId), (org = new Map()));
      org.set(Number(id), { ts: Number(ts), score: Number(score) });
    }
  }

  private setDecision(d: MirrorDecisionRow): void {
    const parsed = parseCidr(d.network);
    if (!parsed) throw new Error(`ipv4 decision network ${d.network} is not IPv4`);
    let org = this.orgs.get(Number(d.org_id));
    if (!org) this.orgs.set(Number(d.org_id), (org = new OrgDecisions()));
    org.set(d.network, { ...parsed, decision: Number(d.decision), ttl: d.ttl === null ? null : Number(d.ttl), micros: Number(d.micros), changed: d.changed });
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
      await this.applyChanges(await this.rows.changesSince(this.since));
    } catch (err) {
      if (this.stateValue !== 'ready') return;
      // A mirror that may have missed a change must not answer again: lists read SQL while it
      // loads anew.
      this.stateValue = 'failed';
      this.cols = emptyColumns(0);
      this.log?.warn({ err }, 'ipv4 list mirror could not catch up: lists read SQL while it reloads');
      this.loading = this.load();
    }
  }

  private async applyChanges(changes: MirrorChanges): Promise<void> {
    if (this.closed) return;
    const gone = new Set<number>();
    for (const [kind, indicatorId, orgId, network] of changes.deleted ?? []) {
      if (kind === 0) throw new Error('ipv4 list table truncated: the mirror reloads');
      if (kind === 1) gone.add(Number(indicatorId));
      else this.orgs.get(Number(orgId))?.delete(network!);
    }
    for (const d of changes.decisions ?? []) this.setDecision(d);
    this.setAnchors(changes.anchors ?? []);
    if (gone.size > 0) this.remove(gone);
    if (changes.rows) this.upsert(changes.rows, changes.asInfo);
    this.since = changes.since;
  }

  private remove(ids: Set<number>): void {
    const c = this.cols;
    let w = 0;
    for (let r = 0; r < c.n; r++) {
      if (ids.has(c.id[r]!)) continue;
      if (w !== r) for (const name of COLUMN_NAMES) c[name][w] = c[name][r]!;
      w++;
    }
    c.n = w;
  }

  private upsert(packed: Uint8Array, asInfo: AsInfoRow[] | null): void {
    const c = this.cols;
    const count = packed.byteLength / ROW_BYTES;
    const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
    const infoOf = new Map<number, AsInfoRow>();
    for (const info of asInfo ?? []) infoOf.set(Number(info[0]), info);
    const fresh: PackedRow[] = [];
    for (let k = 0; k < count; k++) {
      const row = {} as PackedRow;
      readRow(view, k * ROW_BYTES, row);
      row.as = this.asOf(infoOf.get(row.id), row.addr);
      row.cdn = this.cdnOf(row.addr);
      const i = this.positionOf(row.id);
      if (i >= 0) this.write(c, i, row);
      else fresh.push(row);
    }
    if (fresh.length === 0) return;
    fresh.sort((a, b) => a.id - b.id);
    // Rows arrive in id order; new ids usually lie above every held one (append), otherwise
    // the columns are merged from the back into room made at the end.
    this.ensureCapacity(c, c.n + fresh.length);
    let r = c.n - 1;
    let w = c.n + fresh.length - 1;
    for (let f = fresh.length - 1; f >= 0; f--) {
      const row = fresh[f]!;
      while (r >= 0 && c.id[r]! > row.id) {
        for (const name of COLUMN_NAMES) c[name][w] = c[name][r]!;
        r--;
        w--;
      }
      this.write(c, w, row);
      w--;
    }
    c.n += fresh.length;
  }

  /** The decisions version of an organization, as `Ipv4Store.decisionsVersion` returns it. */
  decisionsVersion(orgId: number): { count: number; changed: string } {
    return this.orgs.get(orgId)?.version(this.epoch) ?? { count: 0, changed: this.epoch };
  }

  /**
   * What a list filter selects, for the mirror; null when the mirror cannot evaluate it (a
   * blocking rule with tags needs the tags and sources, which only SQL holds).
   */
  plan(filter: Ipv4ListFilter): MirrorPlan | null {
    if (filter.rule && filter.rule.tags.length > 0) return null;
    const ranges: MirrorPlan['ranges'] = [];
    for (const cidr of filter.reserved) {
      const r = parseIpv4(cidr);
      if (r) ranges.push({ start: r.start, end: r.end });
      else if (!cidr.includes(':')) return null; // not a network the mirror understands: SQL decides
    }
    const org = filter.hasDecisions ? this.orgs.get(filter.orgId) : undefined;
    const anchors = this.anchors.get(filter.orgId);
    return {
      now: filter.now,
      visibleUpTo: filter.visibleUpTo ?? Number.POSITIVE_INFINITY,
      cutoffs: Float64Array.from(filter.cutoffs),
      ranges,
      decision: org && org.byNetwork.size > 0 ? org.lookup() : null,
      anchors: anchors && anchors.size > 0 ? anchors : null,
    };
  }

  /** Position range (after, upTo] of ids. */
  private span(after: number | null, upTo: number | null): [number, number] {
    return [after === null ? 0 : this.upperBound(after), upTo === null ? this.cols.n : this.upperBound(upTo)];
  }

  /**
   * The first position >= i and < end whose row the plan lists (end when none). The twin of
   * `listWhere` (store/ipv4.ts), and so of `isBlocked`.
   */
  private nextListed(plan: MirrorPlan, i: number, end: number): number {
    const c = this.cols;
    const { cutoffs, ranges, decision, now, anchors, visibleUpTo } = plan;
    const nr = ranges.length;
    const ts = c.ts;
    const score = c.score;
    const delayed = visibleUpTo !== Number.POSITIVE_INFINITY;
    for (; i < end; i++) {
      // The organization's anchor replaces the row's (ts, score) while newer.
      let rowTs = ts[i]!;
      let rowScore = score[i]!;
      if (anchors) {
        const a = anchors.get(c.id[i]!);
        if (a && a.ts > rowTs) {
          rowTs = a.ts;
          rowScore = a.score;
        }
      }
      if (delayed && rowTs > visibleUpTo) continue;
      if (nr > 0 || decision) {
        const addr = c.addr[i]!;
        const len = c.len[i]!;
        if (nr > 0) {
          const last = addr + 2 ** (32 - len) - 1;
          let reserved = false;
          for (let k = 0; k < nr; k++) {
            const r = ranges[k]!;
            if (r.start <= last && addr <= r.end) {
              reserved = true;
              break;
            }
          }
          if (reserved) continue;
        }
        if (decision) {
          const d = decision(addr, len);
          if (d) {
            if (d.decision === 0) continue;
            if (d.decision === 1 && (d.ttl === null || d.ttl > now)) return i;
          }
        }
      }
      if (rowTs >= cutoffs[rowScore - 1]!) return i;
    }
    return end;
  }

  /** `Ipv4Store.listVersion` over the mirror. */
  version(plan: MirrorPlan, after: number | null, upTo: number | null): string {
    const c = this.cols;
    const v = new VersionSum();
    const [start, end] = this.span(after, upTo);
    for (let i = this.nextListed(plan, start, end); i < end; i = this.nextListed(plan, i + 1, end)) v.add(c.id[i]!, c.updated[i]!);
    return v.text();
  }

  /**
   * Up to `limit` listed rows with after < id <= upTo written as address-list entries: a /32 as
   * the bare address, a network in CIDR notation (`displayIp` of routes/ips/lists.ts), each
   * followed by a line break (`lines`) or preceded by a comma unless it is the list's first.
   */
  addressText(plan: MirrorPlan, after: number | null, upTo: number | null, limit: number, format: 'lines' | 'comma', first: boolean): MirrorText {
    const [start, end] = this.span(after, upTo);
    return this.writeAddresses(plan, start, end, limit, format, first, null);
  }

  /**
   * A whole page of an address list in one pass: its last id, whether more follow and its
   * version (what `Ipv4Store.listBoundary` gives), with its text, starting a response.
   */
  addressPage(plan: MirrorPlan, after: number | null, n: number, format: 'lines' | 'comma'): MirrorPage & { text: Buffer } {
    const [start, end] = this.span(after, null);
    const v = new VersionSum();
    const { text, last, next } = this.writeAddresses(plan, start, end, n, format, true, v);
    return { text, last, more: next < end, version: v.text() };
  }

  private writeAddresses(plan: MirrorPlan, start: number, end: number, limit: number, format: 'lines' | 'comma', first: boolean, v: VersionSum | null): MirrorText & { next: number } {
    const c = this.cols;
    const w = new ByteWriter(Math.min(limit, end - start) * 16 + 16);
    let count = 0;
    let last: number | null = null;
    let i = this.nextListed(plan, start, end);
    for (; i < end && count < limit; i = this.nextListed(plan, i + 1, end)) {
      if (format === 'comma' && !(first && count === 0)) w.byte(44);
      w.network(c.addr[i]!, c.len[i]!);
      if (format === 'lines') w.byte(10);
      count++;
      last = c.id[i]!;
      v?.add(last, c.updated[i]!);
    }
    return { text: w.take(), last, count, next: i };
  }

  /**
   * Up to `limit` listed rows with after < id <= upTo written as `/flat` CSV lines
   * (FLAT_CSV_HEADER; `csvLine` of routes/ips/lists.ts), LiveScore at `plan.now`.
   */
  csvText(plan: MirrorPlan, after: number | null, upTo: number | null, limit: number): MirrorText {
    const c = this.cols;
    const [start, end] = this.span(after, upTo);
    const w = new ByteWriter(Math.min(limit, end - start) * 100 + 16);
    const { asFacts, cdnNames } = this;
    let count = 0;
    let last: number | null = null;
    for (let i = this.nextListed(plan, start, end); i < end && count < limit; i = this.nextListed(plan, i + 1, end)) {
      w.network(c.addr[i]!, c.len[i]!);
      w.byte(44);
      const a = plan.anchors?.get(c.id[i]!);
      w.fixed2(a && a.ts > c.ts[i]! ? liveScore(a.score, plan.now - a.ts) : liveScore(c.score[i]!, plan.now - c.ts[i]!));
      w.byte(44);
      w.int(c.members[i]!);
      w.byte(44);
      w.int(c.events[i]!);
      w.byte(44);
      w.isoSeconds(floorSeconds(c.updated[i]!));
      w.byte(44);
      asFacts.write(w, c.as[i]!);
      w.byte(44);
      cdnNames.write(w, c.cdn[i]!);
      w.byte(10);
      count++;
      last = c.id[i]!;
    }
    return { text: w.take(), last, count };
  }
}

/** Entries of a list written by the mirror, and the id of the last one. */
export interface MirrorText {
  text: Buffer;
  last: number | null;
  count: number;
}

/** Count, id sum and largest updated_at (µs) of listed rows, as `versionText` writes them. */
class VersionSum {
  count = 0;
  private sum = 0;
  private big: bigint | null = null;
  private changed = 0;

  add(id: number, updated: number): void {
    this.count++;
    if (this.big !== null) this.big += BigInt(id);
    else {
      this.sum += id;
      // Past 2^53 a double no longer adds ids exactly.
      if (this.sum > 2 ** 52) {
        this.big = BigInt(this.sum);
        this.sum = 0;
      }
    }
    if (updated > this.changed) this.changed = updated;
  }

  text(): string {
    return `${this.count}:${this.big !== null ? this.big.toString() : String(this.sum)}:${this.changed}`;
  }
}
