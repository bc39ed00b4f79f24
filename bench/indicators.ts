/*
 * File digest look-ups at scale, against a constant fastify route measured in the same run.
 *
 * Generates (seeded, deterministic; kept between runs in its own PostgreSQL database) 4,000,000
 * archived digests for deep scan, 200,000 files in the main store and 200,000 each of domains and
 * URLs, all times `--scale`. Then starts the real control plane (auth, coins, rate limit on) and a
 * bare fastify app with one constant route in a child process, and drives each with autocannon at
 * 32 connections:  GET /files/{digest}  (main store, MD5/SHA1/SHA256 in turn),
 *                  GET /files/{digest}?deep_scan=YES  (digests only the archive holds),
 *                  GET /const  (the baseline).
 * Writes bench/results/indicators.md.
 *
 *   npx tsx bench/indicators.ts [--scale 0.25] [--duration 5] [--connections 32] [--fresh]
 *   PostgreSQL is a private cluster started for the run (bench/_pg-cluster.ts): the data is
 *   generated anew each run and PostgreSQL CPU counts only that cluster's processes.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { CPU_COLUMNS, CPU_NOTE, cpuCells, cpuPerRequest, cpuSnapshot, cpuText, type CpuPerRequest } from './_cpu.ts';
import Fastify from 'fastify';
import pg from 'pg';
import { buildServerBundle, serverBundle } from './_server-bundle.ts';
import { startPgCluster } from './_pg-cluster.ts';
import { args, flag } from './_args.ts';

const here = dirname(fileURLToPath(import.meta.url));
const SCALE = flag('scale', 1);
const DURATION = flag('duration', 5);
const CONNECTIONS = flag('connections', 32);
const ARCHIVE = Math.round(4_000_000 * SCALE);
const MAIN = Math.round(200_000 * SCALE);
const NAMED = Math.round(200_000 * SCALE);
/** The bench cluster's URL: set by main(), handed to the serving child as DATABASE_URL. */
let SERVER_URL = process.env.DATABASE_URL ?? '';
const DB_NAME = `rampart_bench_indicators_${String(SCALE).replace('.', '_')}`;

function dbUrl(name: string): string {
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

// The generator's digests, computed the same way in SQL (below) and here (to pick request paths).
const md5 = (s: string) => createHash('md5').update(s).digest('hex');
const sha1Like = (s: string) => createHash('sha512').update(s).digest().subarray(0, 20).toString('hex');
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const digestSql = (prefix: string) =>
  `decode(md5('${prefix}' || g), 'hex'), substring(sha512(convert_to('${prefix}' || g, 'UTF8')) from 1 for 20), sha256(convert_to('${prefix}' || g, 'UTF8'))`;
const TYPES = `(array['application/vnd.microsoft.portable-executable','application/x-executable','application/pdf','application/zip','text/javascript','application/msword'])[1 + g % 6]`;

async function generate(): Promise<void> {
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  const exists = (await admin.query('select 1 from pg_database where datname = $1', [DB_NAME])).rowCount === 1;
  if (exists && !args.includes('--fresh')) {
    const c = new pg.Client({ connectionString: dbUrl(DB_NAME) });
    await c.connect();
    const done = (await c.query("select count(*)::int as n from pg_tables where tablename = 'bench_done'")).rows[0].n === 1;
    await c.end();
    if (done) {
      await admin.end();
      console.log(`reusing ${DB_NAME} (generated earlier with the same scale; --fresh regenerates)`);
      return;
    }
  }
  await admin.query(`drop database if exists ${DB_NAME} with (force)`);
  await admin.query(`create database ${DB_NAME}`);
  await admin.end();
  // Migrations through the server's own store, then bulk loads in SQL (server-side generate_series).
  const { openStore } = await import('../apps/server/src/store/index.ts');
  const store = await openStore({ databaseUrl: dbUrl(DB_NAME) });
  await store.close();
  const c = new pg.Client({ connectionString: dbUrl(DB_NAME) });
  await c.connect();
  const t0 = performance.now();
  // Indexes are built once after the load: far cheaper than maintaining them row by row.
  await c.query('drop index file_archive_md5_idx, file_archive_sha1_idx, file_archive_sha256_idx');
  const step = 500_000;
  for (let from = 1; from <= ARCHIVE; from += step) {
    const to = Math.min(ARCHIVE, from + step - 1);
    await c.query(
      `insert into file_archive (md5, sha1, sha256, file_type, file_name, score, ts, entry_ts)
       select ${digestSql('arc-')}, ${TYPES}, 'sample-' || g || '.bin', 1 + (g::bigint * 7919) % 1000, 1600000000 + g, 1600000000 + g
       from generate_series($1::int, $2::int) g`,
      [from, to],
    );
    process.stdout.write(`archive ${to.toLocaleString('en')} / ${ARCHIVE.toLocaleString('en')}\r`);
  }
  await c.query('create index file_archive_md5_idx on file_archive (md5)');
  await c.query('create index file_archive_sha1_idx on file_archive (sha1)');
  await c.query('create index file_archive_sha256_idx on file_archive (sha256)');
  const now = Math.floor(Date.now() / 1000);
  await c.query(
    `insert into file_indicators (md5, sha1, sha256, file_type, file_name, score, ts, entry_ts, members, events)
     select ${digestSql('main-')}, ${TYPES}, 'main-' || g || '.bin', 1 + (g::bigint * 7919) % 1000, $2 - g, $2 - g, 1, 1 from generate_series(1, $1::int) g`,
    [MAIN, now],
  );
  for (const [table, value] of [['domain_indicators', `'d' || g || '.bench.example'`], ['url_indicators', `'https://u' || g || '.bench.example/p/' || g`]]) {
    await c.query(
      `insert into ${table} (value, score, ts, entry_ts, members, events)
       select ${value}, 1 + (g::bigint * 7919) % 1000, $2 - g, $2 - g, 1, 1 from generate_series(1, $1::int) g`,
      [NAMED, now],
    );
  }
  await c.query('analyze');
  await c.query('create table bench_done (at timestamptz default now())');
  await c.end();
  console.log(`\ngenerated ${ARCHIVE.toLocaleString('en')} archived digests, ${MAIN.toLocaleString('en')} files, ${NAMED.toLocaleString('en')} domains and URLs in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

/** Child process: the control plane and the constant route, each on its own port. */
async function serve(): Promise<void> {
  const { buildApp, loadConfig, openStore, createApiKey, createOrganization, createUser } = await serverBundle();
  const config = { ...loadConfig({ DATABASE_URL: dbUrl(DB_NAME) }), logLevel: 'silent' as const, demo: false, rateLimitPerMinute: 1_000_000_000 };
  // Diagnostics only: BENCH_FREE=1 prices every request at 0 coins to show what charging costs.
  if (process.env.BENCH_FREE === '1') config.coinPrices = Object.fromEntries(Object.keys(config.coinPrices).map((k) => [k, 0])) as typeof config.coinPrices;
  const store = await openStore({ databaseUrl: config.databaseUrl, poolMax: config.pgPoolMax });
  const name = `bench-${Date.now()}`;
  const org = await createOrganization(store, { name, credits: 1_000_000_000_000 });
  const username = `${name}@bench.example`;
  await createUser(store, { orgGid: org.gid, username, role: 1 });
  const { key } = await createApiKey(store, { username });
  const app = await buildApp({ config, store });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const constant = Fastify();
  constant.get('/const', async () => ({ ok: true }));
  await constant.listen({ host: '127.0.0.1', port: 0 });
  const port = (s: { server: { address(): unknown } }) => (s.server.address() as { port: number }).port;
  process.stdout.write(`${JSON.stringify({ app: port(app), constant: port(constant), key })}\n`);
}

interface Run {
  label: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  cpu: CpuPerRequest;
}

/** The serving child process (control plane and constant route), set once it runs. */
let serverPid = 0;
/** CPU ticks of the bench's PostgreSQL cluster, set once it runs. */
let postgresTicks = () => 0;

async function load(label: string, url: string, paths: string[], headers: Record<string, string>): Promise<Run> {
  let i = 0;
  const before = cpuSnapshot(serverPid, postgresTicks);
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION,
    headers,
    requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, path: paths[i++ % paths.length]! }) }],
  });
  const cpu = cpuPerRequest(before, cpuSnapshot(serverPid, postgresTicks), result.requests.total);
  const run = { label, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors, cpu };
  console.log(`${label}: ${Math.round(run.rps).toLocaleString('en')} req/s, p50 ${run.p50} ms, p99 ${run.p99} ms, non-2xx ${run.non2xx}, errors ${run.errors}; ${cpuText(cpu)}`);
  return run;
}

async function main(): Promise<void> {
  const cluster = await startPgCluster();
  SERVER_URL = cluster.url;
  postgresTicks = cluster.cpuTicks;
  await generate();
  buildServerBundle();
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve', '--scale', String(SCALE)], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DATABASE_URL: cluster.url } });
  const ready = await new Promise<{ app: number; constant: number; key: string }>((resolve, reject) => {
    let buffer = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const line = buffer.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line));
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  serverPid = child.pid!;
  try {
    // Request paths from the generator's own seeds, spread over the whole key range.
    const pick = (n: number, count: number) => Array.from({ length: count }, (_, k) => 1 + Math.floor(((k * 2_654_435_761) % 4_294_967_296) / 4_294_967_296 * n));
    const digestOf = (prefix: string, g: number, k: number) => [md5, sha1Like, sha256][k % 3]!(`${prefix}${g}`);
    const mainPaths = pick(MAIN, 5000).map((g, k) => `/api/v1/files/${digestOf('main-', g, k)}`);
    const deepPaths = pick(ARCHIVE, 5000).map((g, k) => `/api/v1/files/${digestOf('arc-', g, k)}?deep_scan=YES`);
    const auth = { authorization: ready.key };
    // Warm-up: connection pools, JIT, the key cache, index pages.
    let w = 0;
    await autocannon({ url: `http://127.0.0.1:${ready.app}`, connections: CONNECTIONS, amount: 2000, headers: auth, requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, path: mainPaths[w++ % mainPaths.length]! }) }] });
    const base = await load('constant fastify route', `http://127.0.0.1:${ready.constant}`, ['/const'], {});
    // For orientation: the same server answering a public route with one store round trip (no key, no coins).
    const version = await load('GET /version (no auth, one select 1)', `http://127.0.0.1:${ready.app}`, ['/api/v1/version'], {});
    const main = await load('GET /files/{digest}', `http://127.0.0.1:${ready.app}`, mainPaths, auth);
    const deep = await load('GET /files/{digest}?deep_scan=YES (archive)', `http://127.0.0.1:${ready.app}`, deepPaths, auth);
    const ratio = (r: Run) => r.rps / base.rps;
    const rows = [base, version, main, deep].map((r) => `| ${r.label} | ${Math.round(r.rps).toLocaleString('en')} | ${r.p50} | ${r.p99} | ${r === base ? '1.00' : ratio(r).toFixed(2)} | ${r.non2xx + r.errors} | ${cpuCells(r.cpu)} |`);
    const md = [
      '# File digest look-ups (bench/indicators.ts)',
      '',
      `Run ${new Date().toISOString()}, Node ${process.version}, ${cluster.describe()}, scale ${SCALE}: ${ARCHIVE.toLocaleString('en')} archived digests, ${MAIN.toLocaleString('en')} files in the main store, ${NAMED.toLocaleString('en')} domains and ${NAMED.toLocaleString('en')} URLs.`,
      `autocannon, ${CONNECTIONS} connections, ${DURATION} s per row, client and server on the same 2-core machine; the control plane with auth, coins and rate limiting on.`,
      '',
      `| route | req/s | p50 ms | p99 ms | ratio to constant | non-2xx + errors | ${CPU_COLUMNS} |`,
      '|---|---|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
      CPU_NOTE,
      '',
      `Target: ratio >= 0.5. Main store ${ratio(main) >= 0.5 ? 'meets' : 'misses'} it (${ratio(main).toFixed(2)}), deep scan ${ratio(deep) >= 0.5 ? 'meets' : 'misses'} it (${ratio(deep).toFixed(2)}).`,
      '',
      `Command: \`npx tsx bench/indicators.ts --scale ${SCALE} --duration ${DURATION} --connections ${CONNECTIONS}\``,
      '',
    ].join('\n');
    mkdirSync(join(here, 'results'), { recursive: true });
    writeFileSync(join(here, 'results', 'indicators.md'), md);
    console.log('wrote bench/results/indicators.md');
    if (main.non2xx + main.errors + deep.non2xx + deep.errors > 0) process.exitCode = 1;
  } finally {
    // The server's connections close before the cluster stops (a fast shutdown would cut them).
    if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM'));
    await cluster.stop();
  }
}

if (args.includes('--serve')) await serve();
else await main();
