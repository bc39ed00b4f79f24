import { liveScore } from '@rampart/scoring';
import type { Ipv4DecisionRow, Ipv4ListFilter, Ipv4ListRow, Organization, Store } from '../../store/index.ts';
import type { Enrichment } from '../enrichment/enrichment.ts';
import { visibleUpTo } from '../envelope.ts';
import type { Ipv4Mirror, MirrorPlan } from './mirror/index.ts';
import { ipv4ListFilter, loadIpv4Policy, type Ipv4Policy } from './policy.ts';
import type { TextListOptions, TextListSource } from '../text-list.ts';
import type { ListBodyCache } from '../list-body-cache.ts';
import { asCsv, asFacts, cdnCsv, FLAT_CSV_HEADER } from './csv.ts';

/** Rows per store query: a fifth of a page, about 200 kB of rows and text in memory at a time. */
const LIST_CHUNK = 20_000;
/**
 * Rows per chunk from the mirror: about 800 kB of /flat CSV, written at once into one buffer
 * (fewer stream turns and socket writes than 2,000-row chunks: /flat/2 over 1M 0.58 -> 0.52 s).
 */
const MIRROR_CHUNK = 8_192;


type Columns = 'all' | 'address';

function sqlSource(store: Store, filter: Ipv4ListFilter, columns: Columns): TextListSource<Ipv4ListRow, number> {
  // The boundary scan already yields the page's version: keep it instead of scanning again.
  let known: { after: number | null; upTo: number | null; version: string } | null = null;
  return {
    rows: (after, upTo, limit) => store.ipv4.listRows(filter, after, upTo, limit, columns),
    async boundary(after, n) {
      const b = await store.ipv4.listBoundary(filter, after, n);
      known = { after, upTo: b.last, version: b.version };
      return { last: b.last, more: b.more };
    },
    version: (after, upTo) =>
      known && known.after === after && known.upTo === upTo ? Promise.resolve(known.version) : store.ipv4.listVersion(filter, after, upTo),
    key: (row) => row.id,
  };
}

/**
 * The same list from the in-process mirror, written by it straight to bytes. A mirror that stops
 * being ready (it failed, or reloads) hands whatever is still to be read, be it the page bounds
 * or the rest of a streaming response, to SQL.
 */
function mirrorSource(store: Store, mirror: Ipv4Mirror, plan: MirrorPlan, filter: Ipv4ListFilter, columns: Columns): TextListSource<Ipv4ListRow, number> {
  const sql = sqlSource(store, filter, columns);
  return {
    // Rows and page bounds are read only once `text` or `page` gave up (the mirror is not ready).
    rows: (after, upTo, limit) => sql.rows(after, upTo, limit),
    boundary: (after, n) => sql.boundary(after, n),
    version: async (after, upTo) => (mirror.ready ? mirror.version(plan, after, upTo) : sql.version(after, upTo)),
    key: (row) => row.id,
    text: async (after, upTo, limit, format, first) => {
      if (!mirror.ready) return null;
      return columns === 'address' ? mirror.addressText(plan, after, upTo, limit, format, first) : mirror.csvText(plan, after, upTo, limit);
    },
    ...(columns === 'address' ? { page: async (after: number | null, n: number, format: 'lines' | 'comma') => (mirror.ready ? mirror.addressPage(plan, after, n, format) : null) } : {}),
    chunkRows: MIRROR_CHUNK,
  };
}

/** A /32 is written as the bare address, a network in CIDR notation. */
export function displayIp(network: string): string {
  return network.endsWith('/32') ? network.slice(0, -3) : network;
}

const TWO_DIGITS = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
/** Past 9999-12-31 toISOString writes six-digit years. */
const ISO_FAST_LIMIT = 253_402_300_800;

/** `new Date(seconds * 1000).toISOString()`, with the day's text reused from line to line. */
function isoSeconds(): (seconds: number) => string {
  let day = Number.NaN;
  let dayText = '';
  return (seconds) => {
    if (!Number.isInteger(seconds) || seconds < 0 || seconds >= ISO_FAST_LIMIT) return new Date(seconds * 1000).toISOString();
    const d = Math.floor(seconds / 86_400);
    if (d !== day) {
      day = d;
      dayText = new Date(d * 86_400_000).toISOString().slice(0, 11);
    }
    const r = seconds - d * 86_400;
    return `${dayText}${TWO_DIGITS[Math.floor(r / 3600)]}:${TWO_DIGITS[Math.floor((r % 3600) / 60)]}:${TWO_DIGITS[r % 60]}.000Z`;
  };
}

/** One `/flat` CSV line (FLAT_CSV_HEADER; its AS and CDN fields from services/ipv4/csv.ts). */
function csvLine(enrichment: Enrichment, now: number): (row: Ipv4ListRow) => string {
  const iso = isoSeconds();
  return (row) => {
    const ip = displayIp(row.network);
    const slash = ip.indexOf('/');
    const first = slash < 0 ? ip : ip.slice(0, slash);
    const as = asFacts(row.ip_info?.as_name ?? '', row.ip_info?.asn ?? '', () => enrichment.asnOf(first));
    return `${ip},${liveScore(row.score, now - row.ts).toFixed(2)},${row.members},${row.events},${iso(row.updated)},${asCsv(as.name, as.asn)},${cdnCsv(enrichment.cdnOf(first))}`;
  };
}

/** What a text-list answer needs of one IPv4 list: its rows, how each is written, what else its ETag depends on. */
export interface Ipv4ListAnswer {
  source: TextListSource<Ipv4ListRow, number>;
  line(row: Ipv4ListRow): string;
  header?: string;
  etagSalt: string;
  chunkRows: number;
  /** Present when the mirror answers: the rendered body is kept per view, second and generation. */
  cache?: TextListOptions<Ipv4ListRow, number>['cache'];
}

export interface Ipv4ListsDeps {
  store: Store;
  enrichment: Enrichment;
  /** null: the lists always read SQL. */
  mirror: Ipv4Mirror | null;
  /** Rendered bodies of the lists the mirror answers (absent: every request renders its own). */
  cache?: ListBodyCache;
}

/**
 * The caller's blockable addresses (`/ipv4`, `/flat`): the filter from the organization's policy,
 * the ETag salt, and the row source. The mirror answers when it is ready and can evaluate the
 * filter, after catching up with every committed change (read-your-writes across connections and
 * replicas); otherwise SQL does.
 */
export class Ipv4Lists {
  constructor(private readonly deps: Ipv4ListsDeps) {}

  private async prepare(org: Organization, threshold: number) {
    const { store, mirror } = this.deps;
    const orgId = org.id;
    const now = Math.floor(Date.now() / 1000);
    const useMirror = mirror?.ready === true;
    const [policy] = await Promise.all([loadIpv4Policy(store, orgId), useMirror ? mirror!.catchUp() : undefined]);
    const decisions = useMirror && mirror!.ready ? mirror!.decisionsVersion(orgId) : await store.ipv4.decisionsVersion(orgId);
    const filter = ipv4ListFilter(policy, threshold, now, decisions.count > 0, visibleUpTo(org, now));
    const plan = useMirror && mirror!.ready ? mirror!.plan(filter) : null;
    // The ETag must move when the organization's settings or decisions do, not only the rows.
    const salt = JSON.stringify([policy.reserved, policy.rule, decisions]);
    const source = (columns: Columns) => (plan ? mirrorSource(store, mirror!, plan, filter, columns) : sqlSource(store, filter, columns));
    // What the rows of a list depend on besides its threshold: the organization's view (policy and
    // decisions in the salt, its delay), the second (cutoffs, ttl, live scores) and the mirror's data.
    const generation = plan ? mirror!.listGeneration : -1;
    const cacheOf = (columns: Columns): Ipv4ListAnswer['cache'] =>
      plan && this.deps.cache
        ? {
            store: this.deps.cache,
            key: JSON.stringify([columns, orgId, threshold, now, filter.visibleUpTo ?? null, salt, generation]),
            current: () => mirror!.ready && mirror!.listGeneration === generation,
          }
        : undefined;
    return { now, salt, source, cacheOf };
  }

  /** The addresses only, one per entry (`/ipv4`, `/flat?list=YES`). */
  async addresses(org: Organization, threshold: number): Promise<Ipv4ListAnswer> {
    const { salt, source, cacheOf } = await this.prepare(org, threshold);
    return { source: source('address'), line: (row) => displayIp(row.network), etagSalt: salt, chunkRows: LIST_CHUNK, cache: cacheOf('address') };
  }

  /**
   * Every row `/ipv4/{threshold}` lists for the organization at this second (the same policy,
   * delay and filter), with what decides how long each stays listed: CrowdSec bouncers
   * (services/crowdsec/bouncers.ts). Read from SQL, which every change reaches first.
   */
  async decisionRows(org: Organization, threshold: number): Promise<{ policy: Ipv4Policy; nowMs: number; now: number; rows: Ipv4DecisionRow[] }> {
    const { store } = this.deps;
    const nowMs = Date.now();
    const now = Math.floor(nowMs / 1000);
    const [policy, decisions] = await Promise.all([loadIpv4Policy(store, org.id), store.ipv4.decisionsVersion(org.id)]);
    const filter = ipv4ListFilter(policy, threshold, now, decisions.count > 0, visibleUpTo(org, now));
    const rows: Ipv4DecisionRow[] = [];
    for (let after: number | null = null; ; ) {
      const chunk = await store.ipv4.listDecisionRows(filter, after, LIST_CHUNK);
      rows.push(...chunk);
      if (chunk.length < LIST_CHUNK) break;
      after = chunk.at(-1)!.id;
    }
    return { policy, nowMs, now, rows };
  }

  /**
   * How many entries `/ipv4/{threshold}` lists for the organization now: what an agent of that
   * threshold should enforce before its own caps (attestation, services/agents/drift.ts). A list
   * version is `count:idSum:changed` from either source (store/ipv4.ts, ipv4-mirror/renderer.ts).
   */
  async count(org: Organization, threshold: number): Promise<number> {
    const { source } = await this.prepare(org, threshold);
    const version = await source('address').version(null, null);
    return Number(version.split(':', 1)[0]);
  }

  /** The `/flat` CSV (FLAT_CSV_HEADER). */
  async csv(org: Organization, threshold: number): Promise<Ipv4ListAnswer> {
    const { now, salt, source, cacheOf } = await this.prepare(org, threshold);
    return {
      source: source('all'),
      cache: cacheOf('all'),
      header: FLAT_CSV_HEADER,
      line: csvLine(this.deps.enrichment, now),
      // LiveScore is computed for the request second: the bytes change with it.
      etagSalt: `${salt}:${now}`,
      chunkRows: LIST_CHUNK,
    };
  }
}
