/*
 * Issue 36 item 3: a generator fast enough for ten million IPv4 indicators. Rows are computed in
 * this process (seeded, one hash per indicator) and streamed into PostgreSQL with COPY FROM STDIN
 * (pg-copy-streams), indicators and reports on two connections at once; the indexes of the two
 * tables are dropped before and rebuilt after (cheaper than maintaining them row by row).
 *
 * The rows are those the store's ingestion (store/ipv4-ingest.ts) writes for the same reports:
 * an indicator per public address (ipv4SpecialRange: none), gid RMP-RULE-GID-<32 hex>,
 * is_network false, ip_info as the server's offline enrichment gives it for the address (as
 * services/ipv4/reports.ts does at the first report), score = scoreV32 of its reporters (packages/scoring, as services/ipv4/ingest.ts),
 * members = reporters, events = their sum, sources the sorted distinct union, entry_ts <= ts,
 * change_xid the loading transaction's id (what the stamp trigger of migration 0009 would set);
 * one ipv4_reports row per (indicator, organization). Realistic spread: most addresses reported by
 * one organization a few times, a long tail by many, events per report up to ~1000.
 *
 *   npx tsx bench/gen-ipv4-copy.ts --n 10000000 [--orgs 200]   (DATABASE_URL names the database;
 *   it must be migrated and hold no IPv4 indicators yet)
 */
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Writable } from 'node:stream';
import { ipv4SpecialRange, type Ipv4Net } from '@rampart/contracts';
import { scoreV32 } from '@rampart/scoring';
import { createEnrichment } from '../apps/server/src/services/enrichment/enrichment.ts';

export const GEN_SOURCES = ['crowdsec', 'http', 'rdp', 'scan', 'sip', 'smtp', 'ssh'] as const;
/** Spread of ts: the last 30 days before `now`. */
const TS_SPAN = 30 * 86_400;
const MULT = 2_654_435_761;

/** Organization o's trust, as written to organizations.trust: 0.3 … 1.0. */
export const orgTrust = (o: number) => [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0][o % 8]!;

/** A 32-bit mix (lowbias32): the generator's only source of randomness. */
function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

export interface GenReport {
  /** Index of the organization (0 … orgs-1): its row is the index's in `orgIds`. */
  org: number;
  confidence: number;
  events: number;
  source: string;
}

export interface GenIndicator {
  id: number;
  gid: string;
  /** The address as an unsigned 32-bit number. */
  addr: number;
  network: string;
  score: number;
  ts: number;
  entryTs: number;
  members: number;
  events: number;
  sources: string[];
  reports: GenReport[];
}

let enrichment: ReturnType<typeof createEnrichment> | null = null;
/** The ip_info ingestion stores for a new indicator at `network` (its first address's). */
export function genIpInfo(network: string): Record<string, string> | null {
  enrichment ??= createEnrichment({});
  return enrichment.ipInfo(network.replace(/\/\d+$/, '')) as Record<string, string> | null;
}

/** COPY text format: backslash, tab and line ends escaped. */
const copyText = (text: string) => text.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!);

/** How many organizations report an address: 1 for most, a long tail up to 60. */
function reporterCount(h: number): number {
  const u = h % 1000;
  if (u < 620) return 1;
  if (u < 820) return 2;
  if (u < 900) return 3;
  if (u < 960) return 4 + (h % 3);
  if (u < 990) return 7 + (h % 14);
  return 21 + (h % 40);
}

const hex8 = (x: number) => x.toString(16).toUpperCase().padStart(8, '0');
const dotted = (a: number) => `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}`;

/**
 * The indicators in id order (1 … n): indicator ids are the positions of public addresses in a
 * fixed permutation of IPv4 (a × 2654435761 + 12345 mod 2^32, a bijection: no two collide).
 */
export function* genIndicators(n: number, orgs: number, now: number, seed = 1): Generator<GenIndicator> {
  const probe: Ipv4Net = { start: 0, end: 0, prefix: 32 };
  let candidate = 0;
  for (let id = 1; id <= n; id++) {
    let addr: number;
    do {
      addr = Number((BigInt(candidate++) * BigInt(MULT) + 12_345n + BigInt(seed)) % 4_294_967_296n);
      probe.start = probe.end = addr;
    } while (ipv4SpecialRange(probe) !== undefined);
    const h = mix(id ^ Math.imul(seed, 0x9e3779b9));
    const h2 = mix(h + 1);
    const h3 = mix(h2 + 1);
    const k = Math.min(orgs, reporterCount(h));
    const first = h2 % orgs;
    // A stride coprime to orgs visits k distinct organizations.
    let stride = 1 + (h3 % Math.max(1, orgs - 1));
    while (gcd(stride, orgs) !== 1) stride += 1;
    const reports: GenReport[] = [];
    for (let j = 0; j < k; j++) {
      const r = mix(h3 + j * 7919);
      // Events per report: 1 for half of them, then up to ~1000 on a log scale.
      const events = r % 2 === 0 ? 1 : 1 + Math.floor(2 ** (((r >>> 1) % 1000) / 100)) - 1;
      reports.push({ org: (first + j * stride) % orgs, confidence: Number((0.3 + ((r >>> 12) % 15) * 0.05).toFixed(2)), events, source: GEN_SOURCES[(r >>> 20) % GEN_SOURCES.length]! });
    }
    const score = scoreV32(reports.map((r) => ({ orgTrust: orgTrust(r.org), confidence: r.confidence, events: r.events }))).s0;
    const ts = now - (h2 % TS_SPAN);
    const entryTs = ts - (h3 % 86_400) * Math.min(1, k - 1);
    yield {
      id,
      gid: `RMP-RULE-GID-${hex8(h)}${hex8(h2)}${hex8(h3)}${hex8(mix(h3 + 99))}`,
      addr,
      network: `${dotted(addr)}/32`,
      score,
      ts,
      entryTs,
      members: k,
      events: reports.reduce((s, r) => s + r.events, 0),
      sources: [...new Set(reports.map((r) => r.source))].sort(),
      reports,
    };
  }
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Writes `text` to a COPY stream, waiting when its buffer is full. */
async function put(stream: Writable, text: string): Promise<void> {
  if (!stream.write(text)) await new Promise<void>((resolve) => stream.once('drain', resolve));
}

function finished(stream: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('finish', resolve);
    stream.once('error', reject);
  });
}

export interface GenResult {
  indicators: number;
  reports: number;
  seconds: { copy: number; indexes: number; analyze: number };
  orgIds: number[];
}

/**
 * Loads n indicators into the migrated, empty database at `url`: `orgs` organizations (named
 * `<prefix>-<o>`), the indicators and their reports, the tables' indexes rebuilt, the feed clock
 * at the newest ts, statistics analyzed. `now` is the newest ts (seconds).
 */
export async function copyIpv4(url: string, n: number, options: { orgs?: number; now?: number; seed?: number; prefix?: string; log?: (line: string) => void } = {}): Promise<GenResult> {
  const orgs = options.orgs ?? 200;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const prefix = options.prefix ?? 'gen-org';
  const log = options.log ?? (() => undefined);
  const a = new pg.Client({ connectionString: url });
  const b = new pg.Client({ connectionString: url });
  await a.connect();
  await b.connect();
  try {
    const held = await a.query<{ n: number }>('select count(*)::int as n from ipv4_indicators');
    if (held.rows[0]!.n !== 0) throw new Error('ipv4_indicators is not empty: the generator loads into an empty store');
    const ids = await a.query<{ id: string }>(
      `insert into organizations (gid, name, trust, credit_tokens)
       select 'RMP-GID-' || upper(md5($2 || o)), $2 || '-' || o, (array[0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])[o % 8 + 1], 1000000000000
       from generate_series(0, $1::int - 1) o order by o returning id`,
      [orgs, prefix],
    );
    const orgIds = ids.rows.map((r) => Number(r.id));
    // Every index of the two tables but the indicators' primary key (ids arrive in order).
    const indexes = await a.query<{ name: string; def: string; con: string | null; tbl: string }>(
      `select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as def, c.conname as con,
              i.indrelid::regclass::text as tbl
       from pg_index i left join pg_constraint c on c.conindid = i.indexrelid and c.contype in ('p', 'u')
       where i.indrelid in ('ipv4_indicators'::regclass, 'ipv4_reports'::regclass) and i.indexrelid <> 'ipv4_indicators_pkey'::regclass`,
    );
    const constraintDefs = await a.query<{ tbl: string; con: string; def: string }>(
      `select conrelid::regclass::text as tbl, conname as con, pg_get_constraintdef(oid) as def from pg_constraint
       where conrelid in ('ipv4_indicators'::regclass, 'ipv4_reports'::regclass) and contype in ('p', 'u') and conname <> 'ipv4_indicators_pkey'`,
    );
    for (const ix of indexes.rows) {
      if (ix.con) await a.query(`alter table ${ix.tbl} drop constraint ${ix.con}`);
      else await a.query(`drop index ${ix.name}`);
    }

    const t0 = performance.now();
    // Triggers off for the load (superuser): the foreign keys hold by construction and the stamp
    // trigger's value, the transaction's id, is written as a column instead.
    for (const c of [a, b]) {
      await c.query('begin');
      await c.query('set local session_replication_role = replica');
    }
    const xid = (await a.query<{ x: string }>('select pg_current_xact_id()::text as x')).rows[0]!.x;
    const ind = a.query(copyFrom('copy ipv4_indicators (id, gid, network, is_network, score, ts, entry_ts, members, events, sources, ip_info, change_xid) from stdin'));
    const rep = b.query(copyFrom('copy ipv4_reports (indicator_id, org_id, confidence, events, first_ts, last_ts, sources) from stdin'));
    const indDone = finished(ind);
    const repDone = finished(rep);
    let indText = '';
    let repText = '';
    let reports = 0;
    let maxTs = 0;
    for (const g of genIndicators(n, orgs, now, options.seed)) {
      const info = genIpInfo(g.network);
      indText += `${g.id}\t${g.gid}\t${g.network}\tf\t${g.score}\t${g.ts}\t${g.entryTs}\t${g.members}\t${g.events}\t{${g.sources.join(',')}}\t${info ? copyText(JSON.stringify(info)) : '\\N'}\t${xid}\n`;
      for (const r of g.reports) repText += `${g.id}\t${orgIds[r.org]}\t${r.confidence}\t${r.events}\t${g.entryTs}\t${g.ts}\t{${r.source}}\n`;
      reports += g.reports.length;
      if (g.ts > maxTs) maxTs = g.ts;
      if (indText.length > 1 << 20) {
        await put(ind, indText);
        indText = '';
      }
      if (repText.length > 1 << 20) {
        await put(rep, repText);
        repText = '';
      }
      if (g.id % 1_000_000 === 0) log(`copied ${g.id.toLocaleString('en')} / ${n.toLocaleString('en')} indicators (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
    }
    ind.end(indText);
    rep.end(repText);
    await Promise.all([indDone, repDone]);
    await Promise.all([a.query('commit'), b.query('commit')]);
    const t1 = performance.now();

    // Rebuilt as the migrations made them, both tables at once.
    const rebuild = async (c: pg.Client, tbl: string) => {
      await c.query("set maintenance_work_mem = '512MB'");
      for (const ix of indexes.rows.filter((x) => x.tbl === tbl && !x.con)) await c.query(ix.def);
      for (const con of constraintDefs.rows.filter((x) => x.tbl === tbl)) await c.query(`alter table ${tbl} add constraint ${con.con} ${con.def}`);
    };
    await Promise.all([rebuild(a, 'ipv4_indicators'), rebuild(b, 'ipv4_reports')]);
    const t2 = performance.now();
    await a.query(`select setval('ipv4_indicators_id_seq', greatest($1::bigint, 1))`, [n]);
    await a.query('update feed_clock set ts = greatest(ts, $1) where id = 1', [maxTs]);
    await Promise.all([a.query('vacuum analyze ipv4_indicators'), b.query('vacuum analyze ipv4_reports')]);
    await a.query('analyze organizations');
    const t3 = performance.now();
    return { indicators: n, reports, seconds: { copy: (t1 - t0) / 1000, indexes: (t2 - t1) / 1000, analyze: (t3 - t2) / 1000 }, orgIds };
  } finally {
    await a.end();
    await b.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const flag = (k: string, d: number) => (args.includes(`--${k}`) ? Number(args[args.indexOf(`--${k}`) + 1]) : d);
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL names the (migrated, empty) database to load');
  const r = await copyIpv4(url, flag('n', 1_000_000), { orgs: flag('orgs', 200), log: console.log });
  console.log(`${r.indicators.toLocaleString('en')} indicators, ${r.reports.toLocaleString('en')} reports: COPY ${r.seconds.copy.toFixed(1)} s, indexes ${r.seconds.indexes.toFixed(1)} s, vacuum analyze ${r.seconds.analyze.toFixed(1)} s`);
}
