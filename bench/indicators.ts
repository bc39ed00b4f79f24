/*
 * File digest look-ups at scale, against a no-work server measured in the same run, every side a
 * process of its own (issue 35).
 *
 * Generates (seeded, deterministic) 4,000,000 archived digests for deep scan, 200,000 files in
 * the main store and 200,000 each of domains and URLs, all times `--scale`. Then starts the real
 * control plane (auth, coins, rate limit on; the bundle with production's runtime settings) in a
 * child pinned to the server core, the ceiling (bench/_nowork.ts: a fastify server in its own
 * process answering every request with a main-store look-up's recorded answer) on the same core,
 * and drives each with wrk pinned to the client core, 32 connections, a Lua script rotating paths:
 *   GET /files/{digest}                 (main store, MD5/SHA1/SHA256 in turn),
 *   GET /files/{digest}?deep_scan=YES   (digests only the archive holds),
 *   GET /version                        (orientation: no key, one store round trip),
 *   the ceiling                         (the main-store paths, answered without work).
 * --rounds rounds, the order reversed every round; the median round's ratios, the load average
 * (1 min) per run. Writes bench/results/indicators.md.
 *
 *   npx tsx bench/indicators.ts [--scale 0.25] [--duration 5] [--connections 32] [--rounds 3] [--fresh]
 *   PostgreSQL is a private cluster started for the run (bench/_pg-cluster.ts): the data is
 *   generated anew each run and PostgreSQL CPU counts only that cluster's processes.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { announced } from './_ipv4-child.ts';
import { CLIENT } from './_load-client.ts';
import { luaString, measureSide, startNoWork, type NoWork } from './_nowork.ts';
import { PINNED, SERVER_CPUS, rps, spawnNodePinned, type Side } from './_pinned.ts';
import { SERVER_RUNTIME, buildServerBundle, serverBundle } from './_server-bundle.ts';
import { startPgCluster } from './_pg-cluster.ts';
import { args, flag } from './_args.ts';

const here = dirname(fileURLToPath(import.meta.url));
const SCALE = flag('scale', 1);
const DURATION = flag('duration', 5);
const CONNECTIONS = flag('connections', 32);
const ROUNDS = flag('rounds', 3);
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

/** Child process: the control plane alone. */
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
  process.stdout.write(`${JSON.stringify({ app: (app.server.address() as { port: number }).port, key })}\n`);
  process.on('SIGTERM', () => void app.close().then(() => store.close()).then(() => process.exit(0)));
}

/** A wrk script requesting `paths` in turn with `headers`. */
function rotateScript(file: string, paths: string[], headers: Record<string, string>): string {
  writeFileSync(
    file,
    [
      `local paths = { ${paths.map(luaString).join(', ')} }`,
      `local headers = { ${Object.entries(headers).map(([k, v]) => `[${luaString(k)}] = ${luaString(v)}`).join(', ')} }`,
      'local i = 0',
      'request = function()',
      '  i = i + 1',
      '  return wrk.format("GET", paths[(i % #paths) + 1], headers)',
      'end',
      '',
    ].join('\n'),
  );
  return file;
}

type Subject = 'ceiling' | 'version' | 'main' | 'deep';
const LABELS: Record<Subject, string> = {
  ceiling: 'no-work server (a main-store look-up\'s answer, its own process): the ceiling',
  version: 'GET /version (no auth, one select 1)',
  main: 'GET /files/{digest}',
  deep: 'GET /files/{digest}?deep_scan=YES (archive)',
};
const ORDER: Subject[] = ['ceiling', 'version', 'main', 'deep'];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const us = (cpuSeconds: number, s: Side) => ((1e6 * cpuSeconds) / Math.max(1, s.run.requests)).toFixed(0);

async function main(): Promise<void> {
  const cluster = await startPgCluster();
  SERVER_URL = cluster.url;
  await generate();
  buildServerBundle();
  const child = spawnNodePinned(fileURLToPath(import.meta.url), {
    cpus: SERVER_CPUS,
    nodeArgs: [...SERVER_RUNTIME.nodeArgs, '--import', 'tsx'],
    args: ['--serve', '--scale', String(SCALE)],
    env: { ...process.env, ...SERVER_RUNTIME.env, DATABASE_URL: cluster.url },
  });
  const work = mkdtempSync(join(tmpdir(), 'rampart-bench-indicators-'));
  let ceiling: NoWork | undefined;
  try {
    const ready = await announced<{ app: number; key: string }>(child, 'the control plane');
    const appUrl = `http://127.0.0.1:${ready.app}`;
    // Request paths from the generator's own seeds, spread over the whole key range.
    const pick = (n: number, count: number) => Array.from({ length: count }, (_, k) => 1 + Math.floor(((k * 2_654_435_761) % 4_294_967_296) / 4_294_967_296 * n));
    const digestOf = (prefix: string, g: number, k: number) => [md5, sha1Like, sha256][k % 3]!(`${prefix}${g}`);
    const mainPaths = pick(MAIN, 5000).map((g, k) => `/api/v1/files/${digestOf('main-', g, k)}`);
    const deepPaths = pick(ARCHIVE, 5000).map((g, k) => `/api/v1/files/${digestOf('arc-', g, k)}?deep_scan=YES`);
    const auth = { Authorization: ready.key };
    const scripts: Record<Subject, string> = {
      ceiling: rotateScript(join(work, 'main.lua'), mainPaths, auth),
      version: rotateScript(join(work, 'version.lua'), ['/api/v1/version'], {}),
      main: join(work, 'main.lua'),
      deep: rotateScript(join(work, 'deep.lua'), deepPaths, auth),
    };
    ceiling = await startNoWork(await fetch(`${appUrl}${mainPaths[0]}`, { headers: { authorization: ready.key } }), work);
    const nowork = ceiling;
    const side = (subject: Subject): Side =>
      measureSide(subject === 'ceiling' ? nowork.pid : child.pid!, `${subject === 'ceiling' ? nowork.url : appUrl}/`, { connections: CONNECTIONS, duration: DURATION, script: scripts[subject] }, cluster.cpuTicks);
    // Warm-up: connection pools, JIT, the key cache, index pages; not counted.
    for (const subject of ORDER) measureSide(subject === 'ceiling' ? nowork.pid : child.pid!, `${subject === 'ceiling' ? nowork.url : appUrl}/`, { connections: CONNECTIONS, duration: 2, script: scripts[subject] });
    const rounds: Array<Record<Subject, Side>> = [];
    for (let r = 0; r < ROUNDS; r++) {
      const round: Partial<Record<Subject, Side>> = {};
      // The order is reversed every round, so that no side always runs on a warmer or quieter machine.
      for (const subject of r % 2 === 0 ? ORDER : [...ORDER].reverse()) round[subject] = side(subject);
      rounds.push(round as Record<Subject, Side>);
      console.log(`round ${r + 1}: ${ORDER.map((x) => `${x} ${rps(round[x]!).toFixed(0)} req/s (${round[x]!.run.bad} bad)`).join(', ')}`);
    }
    writeResults(rounds, cluster.describe());
    if (rounds.some((x) => x.main.run.bad + x.deep.run.bad > 0)) process.exitCode = 1;
  } finally {
    await ceiling?.stop();
    // The server's connections close before the cluster stops (a fast shutdown would cut them).
    if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM'));
    rmSync(work, { recursive: true, force: true });
    await cluster.stop();
  }
}

function writeResults(rounds: Array<Record<Subject, Side>>, clusterText: string): void {
  const ratio = (x: Record<Subject, Side>, s: Subject) => rps(x[s]) / rps(x.ceiling);
  const mainRatios = rounds.map((x) => ratio(x, 'main'));
  const mid = rounds.find((x) => ratio(x, 'main') === median(mainRatios))!;
  const loaded = (l: number) => `${l.toFixed(2)}${l > 2 ? ' (above 2: loaded)' : ''}`;
  const verdictRow = (s: 'main' | 'deep', what: string) => {
    const rs = rounds.map((x) => ratio(x, s));
    const bad = rounds.reduce((a, x) => a + x[s].run.bad, 0);
    return `| ${what} ≥ 0.5 of the ceiling | median ${median(rs).toFixed(2)} (${Math.min(...rs).toFixed(2)}–${Math.max(...rs).toFixed(2)}, ${ROUNDS} rounds) | ≥ 0.5 | ${bad > 0 ? `missed (${bad} non-2xx or errors)` : median(rs) >= 0.5 ? 'met' : 'missed'} |`;
  };
  const md = [
    '# File digest look-ups against a no-work server in its own process (bench/indicators.ts)',
    '',
    `Run ${new Date().toISOString()}, Node ${process.version}, ${clusterText}, scale ${SCALE}: ${ARCHIVE.toLocaleString('en')} archived digests, ${MAIN.toLocaleString('en')} files in the main store, ${NAMED.toLocaleString('en')} domains and ${NAMED.toLocaleString('en')} URLs.`,
    `Every side a process of its own: the control plane (the bundle with production's runtime settings; auth, coins and rate limiting on) and the ceiling (a fastify server answering every request with a main-store look-up's recorded answer, doing no work) ${PINNED ? 'pinned to core 0' : '(not pinned: one core)'}; the load client (${CLIENT === 'wrk' ? "Debian's wrk, a Lua script rotating over 5,000 paths" : CLIENT}) ${PINNED ? 'pinned to core 1' : ''}; PostgreSQL not pinned.`,
    `${CONNECTIONS} connections, ${DURATION} s per run, ${ROUNDS} rounds, the order reversed every round; the median round (by the main store's ratio) below, every round's ratios in the verdicts.`,
    '',
    '| route | req/s | p50 / p99 ms | ratio to the ceiling | non-2xx + errors | CPU µs/request: server / client / PostgreSQL | load average (1 min) |',
    '|---|---|---|---|---|---|---|',
    ...ORDER.map((s) => {
      const x = mid[s];
      return `| ${LABELS[s]} | ${Math.round(rps(x)).toLocaleString('en')} | ${x.run.p50.toFixed(1)} / ${x.run.p99.toFixed(1)} | ${s === 'ceiling' ? '1.00' : ratio(mid, s).toFixed(2)} | ${x.run.bad} | ${us(x.cpu, x)} / ${us(x.run.cpuSeconds, x)} / ${us(x.pg, x)} | ${loaded(x.load)} |`;
    }),
    '',
    '| target (issue 22) | measured | limit | verdict |',
    '|---|---|---|---|',
    verdictRow('main', 'GET /files/{digest}'),
    verdictRow('deep', 'GET /files/{digest}?deep_scan=YES'),
    '',
    `Command: \`npx tsx bench/indicators.ts --scale ${SCALE} --duration ${DURATION} --connections ${CONNECTIONS} --rounds ${ROUNDS}\``,
    '',
  ].join('\n');
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(join(here, 'results', 'indicators.md'), md);
  console.log(md);
}

if (args.includes('--serve')) await serve();
else await main();
