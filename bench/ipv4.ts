/*
 * IPv4 at scale, each figure against a baseline measured in the same run.
 *
 * Data: bench/gen-ipv4.ts (seeded; N indicators, default 1,000,000, reported by 200
 * organizations; kept between runs). The real control plane (auth, coins, rate limiting on) runs
 * in a child process (bench/_ipv4-serve.mjs: plain Node and the server bundle, as `npm start`) next
 * to a bare fastify app with a constant route and a static-file route.
 *   1. GET /ips/{ip} look-ups: req/s and p99 at 32 connections vs GET /const, and in --rounds alternating
 *      rounds against the ceiling row (the same requests answered with a look-up's own bytes by a
 *      no-work server): median and range of the ratio, target >= 0.8 (issue 22);
 *   2. POST /ips ingestion: reports/s at 32 connections (half new addresses, half held ones,
 *      from 32 organizations' contributor keys; target >= 5,000/s);
 *   3. /flat/2 (one streamed response) and /ipv4/1 (following next_page to the end): seconds and
 *      MB/s vs downloading the same bytes as a static file (target <= 3x), and the server's peak RSS;
 *   4. the /ips feed walked from ts=0 with page_size=1000: indicators/s.
 * Writes bench/results/ipv4.md.
 *
 *   npx tsx bench/ipv4.ts [--n 1000000] [--duration 5] [--connections 32] [--walk-seconds 30] [--rounds 5] [--fresh]
 *                         [--only lookup,ingest,flat,ipv4,walk]
 *   --n: a smaller data set generates in seconds (200,000: ~17 s) instead of minutes.
 *   --only runs just the named parts (printed, results file not written): for working on one of them.
 *   Each load run also prints the CPU time per request of the server, the client and PostgreSQL
 *   (from /proc), which says which side bounds it on this machine.
 *   BENCH_CPU_PROF=<dir> runs the server with --cpu-prof and writes its profile into <dir> at the end.
 *   PostgreSQL is a private cluster started for the run (bench/_pg-cluster.ts), so the data is
 *   generated anew each run and PostgreSQL CPU counts only that cluster's processes.
 */
import { createWriteStream, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { BENCH_ORGS, benchDbUrl, benchIp, generateIpv4 } from './gen-ipv4.ts';
import { buildServerBundle } from './_server-bundle.ts';
import { CPU_COLUMNS, CPU_NOTE, cpuCells, cpuPerRequest, cpuSnapshot, cpuText, type CpuPerRequest } from './_cpu.ts';
import { startPgCluster } from './_pg-cluster.ts';
import { args, flag } from './_args.ts';
import { startIpv4Server, type ServeReady } from './_ipv4-child.ts';

const here = dirname(fileURLToPath(import.meta.url));
const N = flag('n', 1_000_000);
const DURATION = flag('duration', 5);
const CONNECTIONS = flag('connections', 32);
const WALK_SECONDS = flag('walk-seconds', 30);
const ROUNDS = flag('rounds', 5);
/** Distinct addresses the look-ups rotate over. */
const LOOKUP_PATHS = 5000;
const KEYS = 32;
const ONLY = args.includes('--only') ? new Set(args[args.indexOf('--only') + 1]!.split(',')) : null;
const part = (name: string) => ONLY === null || ONLY.has(name);

type Ready = ServeReady;

/** The constant server of the serving child (constant route, static files, the ceiling row's look-up bytes). */
const constantUrl = (ready: Ready) => `http://127.0.0.1:${ready.constant}`;

/** The serving child process (control plane and constant route), set once it runs. */
let serverPid = 0;
/** CPU ticks of the bench's PostgreSQL cluster, set once it runs. */
let postgresTicks = () => 0;

interface Run {
  label: string;
  rps: number;
  p50: number;
  p99: number;
  bad: number;
  cpu: CpuPerRequest;
}

async function load(label: string, opts: autocannon.Options): Promise<Run> {
  const before = cpuSnapshot(serverPid, postgresTicks);
  const result = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...opts });
  const cpu = cpuPerRequest(before, cpuSnapshot(serverPid, postgresTicks), result.requests.total);
  const run = { label, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, bad: result.non2xx + result.errors, cpu };
  console.log(`${label}: ${Math.round(run.rps).toLocaleString('en')} req/s, p50 ${run.p50} ms, p99 ${run.p99} ms, non-2xx + errors ${run.bad}; ${cpuText(cpu)}`);
  return run;
}

interface BatchFigures {
  batches: number;
  /** Mean reports per batch. */
  size: number;
  /** Mean milliseconds per batch in each phase. */
  begin: number;
  lock: number;
  write: number;
  commit: number;
}

/** The report batches' histograms of the server's /metrics, as sums and counts. */
async function ingestCounters(appUrl: string): Promise<Record<string, number>> {
  const body = await (await fetch(`${appUrl}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of body.matchAll(/^(rampart_ipv4_ingest_batch_\w+?_(?:sum|count))(?:\{phase="(\w+)"\})? (\S+)$/gm)) out[`${m[1]}${m[2] ? `:${m[2]}` : ''}`] = Number(m[3]);
  return out;
}

/**
 * What the report batches of a run did, from the server's own metrics: batches run their
 * statements one at a time, so reports per batch / (begin + lock + write) bounds reports per second.
 */
async function ingestBatches(appUrl: string, work: () => Promise<Run>): Promise<{ run: Run; batches: BatchFigures }> {
  const before = await ingestCounters(appUrl);
  const run = await work();
  const after = await ingestCounters(appUrl);
  const delta = (key: string) => (after[key] ?? 0) - (before[key] ?? 0);
  const batches = delta('rampart_ipv4_ingest_batch_reports_count');
  const phase = (name: string) => (1000 * delta(`rampart_ipv4_ingest_batch_phase_seconds_sum:${name}`)) / batches;
  const figures = { batches, size: delta('rampart_ipv4_ingest_batch_reports_sum') / batches, begin: phase('begin'), lock: phase('lock'), write: phase('write'), commit: phase('commit') };
  console.log(`  ${batchText(figures)}`);
  return { run, batches: figures };
}

function batchText(b: BatchFigures): string {
  const serial = b.begin + b.lock + b.write;
  return `${b.batches.toLocaleString('en')} batches of ${b.size.toFixed(1)} reports; ms per batch: begin ${b.begin.toFixed(2)}, lock ${b.lock.toFixed(2)}, write ${b.write.toFixed(2)} (one batch at a time: ${serial.toFixed(2)} ms, at most ${Math.round((1000 * b.size) / serial).toLocaleString('en')} reports/s), commit ${b.commit.toFixed(2)} (overlaps the next batch)`;
}

/** Peak resident set of a process while `work` runs (sampled every 20 ms from /proc). */
async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peakMb: number; startMb: number }> {
  let peak = 0;
  const sample = () => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) peak = Math.max(peak, Number(m[1]) / 1024);
    } catch {
      // The process may be gone at the very end.
    }
  };
  sample();
  const startMb = peak;
  const timer = setInterval(sample, 20);
  try {
    return { result: await work(), peakMb: peak, startMb };
  } finally {
    clearInterval(timer);
    sample();
  }
}

/** Downloads `url` into `file`; returns seconds, bytes and the next_page header. */
async function download(url: string, headers: Record<string, string>, file: string, append: boolean): Promise<{ seconds: number; bytes: number; next: string | null }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers });
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  const out = createWriteStream(file, { flags: append ? 'a' : 'w' });
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
  return { seconds: (performance.now() - t0) / 1000, bytes, next: res.headers.get('next_page') };
}

interface StreamRow {
  label: string;
  seconds: number;
  bytes: number;
  lines: number;
  requests: number;
  staticSeconds: number;
  /** The first fetch after start (not counted), and the range of the rounds' ratios. */
  coldSeconds: number;
  ratioRange: [number, number];
  /** Paged lists: the same pages as static files, fetched one after the other (null: one response). */
  staticPagesSeconds: number | null;
  peakMb: number;
  startMb: number;
}

/** Rounds of each plain-text list against its static file, alternating (median and range reported). */
const LIST_ROUNDS = 3;

async function streamList(ready: Ready, pid: number, label: string, path: string, paged: boolean, file: string): Promise<StreamRow> {
  const headers = { authorization: ready.readers[0]! };
  /** The whole list (every page), as a client fetches it. */
  const fetchList = async () => {
    let seconds = 0;
    let bytes = 0;
    let requests = 0;
    let page: string | null = null;
    const sizes: number[] = [];
    do {
      const url: string = `http://127.0.0.1:${ready.app}${path}${page ? `?page=${encodeURIComponent(page)}` : ''}`;
      const r = await download(url, headers, join(ready.staticDir, file), requests > 0);
      seconds += r.seconds;
      bytes += r.bytes;
      sizes.push(r.bytes);
      requests += 1;
      page = paged ? r.next : null;
    } while (page);
    return { seconds, bytes, requests, sizes };
  };
  const copy = join(tmpdir(), `${file}.copy`);
  const fetchStatic = async () => (await download(`${constantUrl(ready)}/static/${file}`, {}, copy, false)).seconds;
  // Round 0 (not counted) warms both sides: the server's first list after start, the page cache.
  const { result, peakMb, startMb } = await peakRss(pid, async () => {
    const cold = await fetchList();
    await fetchStatic();
    const rounds: Array<{ list: Awaited<ReturnType<typeof fetchList>>; statics: number }> = [];
    for (let r = 0; r < LIST_ROUNDS; r++) {
      const list = await fetchList();
      rounds.push({ list, statics: await fetchStatic() });
    }
    return { cold, rounds };
  });
  const lines = (readFileSync(join(ready.staticDir, file), 'utf8').match(/\n/g) ?? []).length;
  const listSeconds = median(result.rounds.map((r) => r.list.seconds));
  const staticSeconds = median(result.rounds.map((r) => r.statics));
  const ratios = result.rounds.map((r) => r.list.seconds / r.statics);
  const last = result.rounds[result.rounds.length - 1]!.list;
  // A paged list is also compared with its pages as static files, fetched as the pages were: a
  // request's fixed cost (HTTP, fetch) is paid per page by both sides.
  let staticPagesSeconds: number | null = null;
  if (paged) {
    const all = readFileSync(join(ready.staticDir, file));
    let offset = 0;
    for (const [k, size] of last.sizes.entries()) {
      writeFileSync(join(ready.staticDir, `${file}.p${k}`), all.subarray(offset, offset + size));
      offset += size;
    }
    const runs = [];
    for (let i = 0; i < LIST_ROUNDS; i++) {
      let s = 0;
      for (let k = 0; k < last.sizes.length; k++) s += (await download(`${constantUrl(ready)}/static/${file}.p${k}`, {}, copy, k > 0)).seconds;
      runs.push(s);
    }
    staticPagesSeconds = median(runs);
  }
  rmSync(copy, { force: true });
  const row = {
    label,
    seconds: listSeconds,
    coldSeconds: result.cold.seconds,
    ratioRange: [Math.min(...ratios), Math.max(...ratios)] as [number, number],
    bytes: last.bytes,
    requests: last.requests,
    lines,
    staticSeconds,
    staticPagesSeconds,
    peakMb,
    startMb,
  };
  const pagesText = staticPagesSeconds === null ? '' : `, static pages ${staticPagesSeconds.toFixed(3)} s (ratio ${(row.seconds / staticPagesSeconds).toFixed(1)}x)`;
  console.log(
    `${label}: ${row.seconds.toFixed(2)} s (median of ${LIST_ROUNDS}; first after start ${row.coldSeconds.toFixed(2)} s) for ${(row.bytes / 1e6).toFixed(1)} MB in ${row.requests} request(s), static ${row.staticSeconds.toFixed(3)} s, ratio ${(row.seconds / row.staticSeconds).toFixed(1)}x (rounds ${row.ratioRange.map((x) => x.toFixed(1)).join('–')}x)${pagesText}, server RSS ${row.startMb.toFixed(0)} MB before, peak ${row.peakMb.toFixed(0)} MB`,
  );
  return row;
}

async function walkFeed(ready: Ready): Promise<{ records: number; seconds: number; complete: boolean; pages: number }> {
  const t0 = performance.now();
  let ts = 0;
  let records = 0;
  let pages = 0;
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${ready.app}/api/v1/ips?ts=${ts}&page_size=1000`, { headers: { authorization: ready.readers[1]! } });
    if (res.status !== 200) throw new Error(`feed: ${res.status}`);
    const page = (await res.json()) as { header: { next_ts: number }; body: unknown[] };
    pages += 1;
    if (page.body.length === 0) return { records, seconds: (performance.now() - t0) / 1000, complete: true, pages };
    records += page.body.length;
    ts = page.header.next_ts;
    if ((performance.now() - t0) / 1000 > WALK_SECONDS) return { records, seconds: (performance.now() - t0) / 1000, complete: false, pages };
  }
}

function reportRequests(ready: Ready) {
  let r = 0;
  return (req: autocannon.Request): autocannon.Request => {
    const k = r++;
    // Even: a new address past the generated ones; odd: an address already held.
    const ip = k % 2 === 0 ? benchIp(N + 1 + Math.floor(Math.random() * 1e9)) : benchIp(1 + (k * 7919) % N);
    return {
      ...req,
      method: 'POST' as const,
      path: '/api/v1/ips',
      headers: { ...req.headers, 'content-type': 'application/json', authorization: ready.contributors[k % KEYS]! },
      body: JSON.stringify({ ip, confidence: 0.8, source: 'bench', lid: k }),
    };
  };
}

const CEILING_LABEL = 'GET /ips/{ip} bytes served as a constant (same client requests)';
const LOOKUP_TARGET = 0.8;

/** (server + client) CPU per request of the ceiling over the look-up's. */
const cpuRatio = (x: { lookup: Run; ceiling: Run }) => (x.ceiling.cpu.server + x.ceiling.cpu.client) / (x.lookup.cpu.server + x.lookup.cpu.client);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const loadText = () => loadavg().map((l) => l.toFixed(2)).join(' ');

interface LookupRounds {
  rounds: Array<{ lookup: Run; ceiling: Run; ratio: number }>;
  median: number;
  min: number;
  max: number;
  /** The round whose ratio is the median (its rows stand in the main table). */
  typical: { lookup: Run; ceiling: Run };
  loadStart: string;
  loadEnd: string;
}

/**
 * Target 4 of issue 22: the look-ups against the ceiling row, ROUNDS rounds, the order of the two
 * rows alternating from round to round (ceiling first in odd rounds), so that neither always runs
 * on a warmer or quieter machine; the median ratio is the verdict's.
 */
async function lookupRounds(ready: Ready, appUrl: string, lookupRequest: (req: autocannon.Request) => autocannon.Request): Promise<LookupRounds> {
  const loadStart = loadText();
  const rounds: LookupRounds['rounds'] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    const ceilingRun = () => load(`${CEILING_LABEL}, round ${r}`, { url: constantUrl(ready), requests: [{ setupRequest: lookupRequest }] });
    const lookupRun = () => load(`GET /ips/{ip}, round ${r}`, { url: appUrl, requests: [{ setupRequest: lookupRequest }] });
    let ceiling: Run;
    let lookup: Run;
    if (r % 2 === 1) {
      ceiling = await ceilingRun();
      lookup = await lookupRun();
    } else {
      lookup = await lookupRun();
      ceiling = await ceilingRun();
    }
    rounds.push({ lookup, ceiling, ratio: lookup.rps / ceiling.rps });
    console.log(`  round ${r}: look-up ${(lookup.rps / ceiling.rps).toFixed(3)} of the ceiling (CPU ratio ${cpuRatio({ lookup, ceiling }).toFixed(2)}); load average ${loadText()}`);
  }
  const ratios = rounds.map((x) => x.ratio);
  const mid = median(ratios);
  const typical = rounds.find((x) => x.ratio === mid)!;
  const out = { rounds, median: mid, min: Math.min(...ratios), max: Math.max(...ratios), typical, loadStart, loadEnd: loadText() };
  console.log(`GET /ips/{ip} / ceiling: median ${out.median.toFixed(3)} (range ${out.min.toFixed(3)}–${out.max.toFixed(3)}) of ${ROUNDS} rounds; load average ${loadStart} → ${out.loadEnd}`);
  return out;
}

/**
 * Before measuring, every look-up path is asked once or more: the mirror reads an indicator's
 * detail columns (gid, sources, notes, …) from SQL on its first look-up and keeps them
 * (services/ipv4/mirror), as the SQL path's pages are warm in PostgreSQL's buffers.
 */
const warmUps = (paths: number) => Math.max(3000, 2 * paths);
/** `--only`: the named parts, printed only. */
async function partial(ready: Ready, pid: number, appUrl: string, lookupRequest: (req: autocannon.Request) => autocannon.Request): Promise<void> {
  if (part('lookup') || part('ingest')) {
    const base = await load('constant fastify route', { url: `${constantUrl(ready)}/const` });
    if (part('lookup')) {
      await autocannon({ url: appUrl, connections: CONNECTIONS, amount: warmUps(LOOKUP_PATHS), requests: [{ setupRequest: lookupRequest }] });
      const floor = await load('GET /healthz (this server: hooks, no key, no database)', { url: `${appUrl}/healthz` });
      const { typical } = await lookupRounds(ready, appUrl, lookupRequest);
      console.log(`  ratio ${(typical.lookup.rps / base.rps).toFixed(3)} (healthz ${(floor.rps / base.rps).toFixed(3)}, ceiling ${(typical.ceiling.rps / base.rps).toFixed(3)})`);
    }
    if (part('ingest')) await ingestBatches(appUrl, () => load('POST /ips', { url: appUrl, requests: [{ setupRequest: reportRequests(ready) }] }));
  }
  if (part('flat')) await streamList(ready, pid, 'GET /flat/2 (CSV, one response)', '/api/v1/flat/2', false, 'flat.csv');
  if (part('ipv4')) await streamList(ready, pid, 'GET /ipv4/1 (all pages via next_page)', '/api/v1/ipv4/1', true, 'ipv4.txt');
  if (part('walk')) {
    const walk = await walkFeed(ready);
    console.log(`feed walk: ${walk.records.toLocaleString('en')} records in ${walk.seconds.toFixed(1)} s (${Math.round(walk.records / walk.seconds).toLocaleString('en')}/s)`);
  }
}

async function main(): Promise<void> {
  const cluster = await startPgCluster();
  postgresTicks = cluster.cpuTicks;
  await generateIpv4(cluster.url, N, args.includes('--fresh'));
  buildServerBundle();
  const serveEnv = { url: benchDbUrl(cluster.url, N).url, orgGids: Array.from({ length: KEYS }, (_, o) => `RMP-GID-BENCH${(o * 6) % BENCH_ORGS}`), free: process.env.BENCH_FREE === '1' };
  const { child, ready, stop } = await startIpv4Server(serveEnv);
  const pid = child.pid!;
  serverPid = pid;
  try {
    const appUrl = `http://127.0.0.1:${ready.app}`;
    const held = Array.from({ length: LOOKUP_PATHS }, (_, k) => `/api/v1/ips/${benchIp(1 + Math.floor(((k * 2_654_435_761) % 4_294_967_296) / 4_294_967_296 * N))}`);
    let i = 0;
    const lookupRequest = (req: autocannon.Request): autocannon.Request => {
      const k = i++;
      return { ...req, path: held[k % held.length]!, headers: { ...req.headers, authorization: ready.readers[k % KEYS]! } };
    };
    if (ONLY !== null) {
      await partial(ready, pid, appUrl, lookupRequest);
      return;
    }
    await autocannon({ url: appUrl, connections: CONNECTIONS, amount: warmUps(LOOKUP_PATHS), requests: [{ setupRequest: lookupRequest }] });
    const base = await load('constant fastify route', { url: `${constantUrl(ready)}/const` });
    // The floor of this server's request path: its global hooks (rate limit, metrics, logger,
    // text guard) and a response schema, with no key, no coins and no database.
    const floor = await load('GET /healthz (this server: hooks, no key, no database)', { url: `${appUrl}/healthz` });
    // The look-ups, and the same requests answered with a look-up's own bytes by the constant
    // server (what the client and HTTP alone allow, i.e. the most any look-up implementation could
    // reach here), in alternating rounds; the median round's rows go in the table.
    const rounds = await lookupRounds(ready, appUrl, lookupRequest);
    const { lookup, ceiling } = rounds.typical;

    const reportRequest = reportRequests(ready);
    const { run: ingest, batches } = await ingestBatches(appUrl, () => load('POST /ips', { url: appUrl, requests: [{ setupRequest: reportRequest }] }));

    const flat = await streamList(ready, pid, 'GET /flat/2 (CSV, one response)', '/api/v1/flat/2', false, 'flat.csv');
    const ipv4 = await streamList(ready, pid, 'GET /ipv4/1 (all pages via next_page)', '/api/v1/ipv4/1', true, 'ipv4.txt');
    const walk = await walkFeed(ready);
    console.log(`feed walk: ${walk.records.toLocaleString('en')} records in ${walk.seconds.toFixed(1)} s (${Math.round(walk.records / walk.seconds).toLocaleString('en')}/s)${walk.complete ? '' : ' (stopped at the time cap)'}`);

    const ratio = (x: Run) => (x.rps / base.rps).toFixed(2);
    const mbps = (bytes: number, s: number) => (bytes / 1e6 / s).toFixed(1);
    const md = [
      '# IPv4 (bench/ipv4.ts)',
      '',
      `Run ${new Date().toISOString()}, Node ${process.version}, PostgreSQL, ${N.toLocaleString('en')} generated IPv4 indicators (bench/gen-ipv4.ts) reported by ${BENCH_ORGS} organizations; ${cluster.describe()}.`,
      `autocannon, ${CONNECTIONS} connections, ${DURATION} s per row; client, server and PostgreSQL share one 2-core machine (shared with other work while this ran). Control plane with auth, ${process.env.BENCH_FREE === '1' ? 'coins priced 0 (BENCH_FREE=1 diagnostic)' : 'coins'} and rate limiting on; requests rotate over ${KEYS} organizations' keys.`,
      '',
      '## Look-ups and ingestion',
      '',
      `| route | req/s | p50 ms | p99 ms | ratio to constant | non-2xx + errors | ${CPU_COLUMNS} |`,
      '|---|---|---|---|---|---|---|---|---|---|',
      ...[base, floor, lookup, ceiling, ingest].map(
        // A report is not a request of the constant's kind: no ratio for ingestion (its target is reports/s).
        (x) =>
          `| ${x.label} | ${Math.round(x.rps).toLocaleString('en')} | ${x.p50} | ${x.p99} | ${x === base ? '1.00' : x === ingest ? '—' : ratio(x)} | ${x.bad} | ${cpuCells(x.cpu)} |`,
      ),
      '',
      CPU_NOTE,
      '',
      `- GET /ips/{ip}: ratio ${ratio(lookup)} to the constant route, the median round's rows above (target >= 0.5: ${lookup.rps / base.rps >= 0.5 ? 'met' : 'missed'}).`,
      `  The same requests answered with a look-up's own bytes (status, headers, body) by the constant server reach ${ratio(ceiling)}: the client's`,
      `  per-request work (a path and key per request) and the larger answer, on the cores the server shares, leave no look-up more than that.`,
      `  GET /healthz, with no key and no database, reaches ${(floor.rps / base.rps).toFixed(2)} of the constant.`,
      `- POST /ips: ${Math.round(ingest.rps).toLocaleString('en')} reports/s acknowledged after commit (target >= 5,000/s: ${ingest.rps >= 5000 ? 'met' : 'missed'}).`,
      `  Its batches, from the server's /metrics: ${batchText(batches)}.`,
      '',
      `## Look-ups against the ceiling (${ROUNDS} alternating rounds)`,
      '',
      `Load average ${rounds.loadStart} at the first round, ${rounds.loadEnd} after the last (1, 5, 15 minutes; the machine has 2 cores).`,
      'The ceiling row runs first in odd rounds, the look-up row in even ones. Look-ups are answered from the in-process mirror',
      '(docs/indicators.md, "GET /ips/{ip} from the IPv4 mirror": catch-up at most once a second, and after every write this replica acknowledged).',
      '',
      '| round | ceiling req/s | GET /ips/{ip} req/s | look-up / ceiling | server CPU µs/request: ceiling | look-up | client: ceiling | look-up | CPU ratio | machine idle: ceiling | look-up |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      ...rounds.rounds.map(
        (x, k) =>
          `| ${k + 1} | ${Math.round(x.ceiling.rps).toLocaleString('en')} | ${Math.round(x.lookup.rps).toLocaleString('en')} | ${x.ratio.toFixed(3)} | ${x.ceiling.cpu.server.toFixed(0)} | ${x.lookup.cpu.server.toFixed(0)} | ${x.ceiling.cpu.client.toFixed(0)} | ${x.lookup.cpu.client.toFixed(0)} | ${cpuRatio(x).toFixed(2)} | ${x.ceiling.cpu.idlePercent.toFixed(0)}% | ${x.lookup.cpu.idlePercent.toFixed(0)}% |`,
      ),
      '',
      'CPU ratio: (server + client) CPU per ceiling request over the same per look-up: what the look-up would reach of the ceiling',
      'if the two processes had the cores to themselves. On a loaded machine both rows wait for the cores alike and the req/s ratio',
      'moves towards 1; on an idle one it approaches the CPU ratio.',
      '',
      '| target | median | range | verdict |',
      '|---|---|---|---|',
      `| GET /ips/{ip} ≥ ${LOOKUP_TARGET} of ceiling | ${rounds.median.toFixed(3)} | ${rounds.min.toFixed(3)}–${rounds.max.toFixed(3)} | ${rounds.median >= LOOKUP_TARGET ? 'met' : 'missed'} |`,
      '',
      `CPU ratio over the rounds: median ${median(rounds.rounds.map(cpuRatio)).toFixed(2)} (range ${Math.min(...rounds.rounds.map(cpuRatio)).toFixed(2)}–${Math.max(...rounds.rounds.map(cpuRatio)).toFixed(2)}).`,
      '',
      '## Plain-text lists',
      '',
      `Each list and its static file fetched in ${LIST_ROUNDS} alternating rounds after one warm-up round each (the first list after start is shown apart); seconds are medians.`,
      '',
      '| list | requests | lines | MB | seconds | first after start s | MB/s | static file s | ratio | ratio per round | static pages s | ratio to pages | server RSS before → peak MB |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
      ...[flat, ipv4].map((x) => `| ${x.label} | ${x.requests} | ${x.lines.toLocaleString('en')} | ${(x.bytes / 1e6).toFixed(1)} | ${x.seconds.toFixed(2)} | ${x.coldSeconds.toFixed(2)} | ${mbps(x.bytes, x.seconds)} | ${x.staticSeconds.toFixed(3)} | ${(x.seconds / x.staticSeconds).toFixed(1)}x | ${x.ratioRange.map((r) => r.toFixed(1)).join('–')}x | ${x.staticPagesSeconds === null ? '—' : x.staticPagesSeconds.toFixed(3)} | ${x.staticPagesSeconds === null ? '—' : `${(x.seconds / x.staticPagesSeconds).toFixed(1)}x`} | ${x.startMb.toFixed(0)} → ${x.peakMb.toFixed(0)} |`),
      '',
      `- GET /flat/2 ≤ 2× a static file (issue 22, target 3): ${(flat.seconds / flat.staticSeconds).toFixed(2)}× (${flat.seconds / flat.staticSeconds <= 2 ? 'met' : 'missed'}).`,
      '',
      `Server RSS while streaming: peak ${Math.max(flat.peakMb, ipv4.peakMb).toFixed(0)} MB (target < 300 MB: ${Math.max(flat.peakMb, ipv4.peakMb) < 300 ? 'met' : 'missed'}); streaming added at most ${Math.max(flat.peakMb - flat.startMb, ipv4.peakMb - ipv4.startMb).toFixed(0)} MB to what the look-up and ingestion runs before it left (${flat.startMb.toFixed(0)} MB).`,
      '',
      'Target: ratio <= 3x the static file, RSS < 300 MB while streaming. /ipv4 serves at most 10,000 lines a page (spec 8), so it is also',
      'compared with the same pages as static files fetched one by one: a request\'s fixed cost then weighs on both sides.',
      '',
      '## Feed walk',
      '',
      `GET /ips from ts=0, page_size=1000, following next_ts: ${walk.records.toLocaleString('en')} records in ${walk.pages} pages, ${walk.seconds.toFixed(1)} s, ${Math.round(walk.records / walk.seconds).toLocaleString('en')} indicators/s${walk.complete ? ' (to the end)' : ` (stopped after the ${WALK_SECONDS} s cap)`}.`,
      '',
      `Command: \`npx tsx bench/ipv4.ts --n ${N} --duration ${DURATION} --connections ${CONNECTIONS} --walk-seconds ${WALK_SECONDS} --rounds ${ROUNDS}\``,
      '',
    ].join('\n');
    mkdirSync(join(here, 'results'), { recursive: true });
    const out = process.env.BENCH_FREE === '1' ? 'ipv4-free.md' : 'ipv4.md';
    writeFileSync(join(here, 'results', out), md);
    console.log(`wrote bench/results/${out}`);
  } finally {
    // The server's connections close before the cluster stops (a fast shutdown would cut them).
    await stop();
    rmSync(ready.staticDir, { recursive: true, force: true });
    await cluster.stop();
  }
}

await main();
