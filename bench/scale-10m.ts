/*
 * Issue 36 item 3: ten million IPv4 indicators and ten thousand agents on three replicas.
 *
 * Creates its own database on the PostgreSQL of DATABASE_URL (dropped at the end unless --keep;
 * --reuse takes a kept one that holds exactly --indicators rows), loads it with the COPY
 * generator (bench/gen-ipv4-copy.ts), then starts three control-plane processes as production
 * does (`node apps/server/dist/main.mjs`, the bundle `npm start` runs), one after the other, and
 * measures for each:
 *   - the time to load its IPv4 mirror (its own log line; target <= 30 s) and what a look-up and
 *     the first list page answer while it loads (SQL);
 *   - RSS once the mirror is loaded (VmRSS);
 *   - GET /ipv4/1 followed through every next_page (the full list);
 *   - GET /ips/{ip} look-up latency (the load client in its own process, bench/_load-client.ts);
 * and the PostgreSQL database size on disk. Then --agents sync-channel clients (default 10,000),
 * spread round robin over the three replicas, held by --client-processes processes
 * (bench/_scale-agents.ts); --decisions decisions (PUT /ips/{ip}, round robin over the replicas):
 * the time from the PUT to each client's receipt (p50, p99, max), and each replica's RSS with
 * its share of the agents. Every row carries the 1-minute load average when it was taken; rows
 * taken above load 2 (the machine has 2 cores) are marked. Writes bench/results/scale-10m.md.
 *
 *   npm run bench:scale -- --indicators 10000000 [--agents 10000] [--decisions 20] [--client-processes 4]
 *                          [--lookup-seconds 10] [--connections 32] [--keep] [--reuse]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { AgentSettingsDocument, ROLE } from '@rampart/contracts';
import { args, flag } from './_args.ts';
import { copyIpv4, genIndicators } from './gen-ipv4-copy.ts';
import { CLIENT, runClient } from './_load-client.ts';
import { buildServerBundle } from './_server-bundle.ts';
import { freePort, startReplica, type Replica, waitFor } from './_scale-replica.ts';

const here = dirname(fileURLToPath(import.meta.url));
const N = flag('indicators', 10_000_000);
const AGENTS = flag('agents', 10_000);
const DECISIONS = flag('decisions', 20);
const CLIENT_PROCESSES = flag('client-processes', 4);
const LOOKUP_SECONDS = flag('lookup-seconds', 10);
const CONNECTIONS = flag('connections', 32);
const REPLICAS = 3;
const KEEP = args.includes('--keep');
const REUSE = args.includes('--reuse');
const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `rampart_bench_scale_${N}`;
const dbUrl = (() => {
  const u = new URL(serverUrl);
  u.pathname = `/${dbName}`;
  return u.toString();
})();

const load1 = () => loadavg()[0]!;
const loadCell = (l: number) => `${l.toFixed(2)}${l > 2 ? ' (above 2)' : ''}`;
const fmt = (x: number) => Math.round(x).toLocaleString('en');
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))]!;
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
const pgVersion = (await admin.query<{ v: string }>('select version() as v')).rows[0]!.v.split(' on ')[0]!;

// 1. The data.
let genLine = '';
const exists = (await admin.query('select 1 from pg_database where datname = $1', [dbName])).rowCount === 1;
let reuse = false;
if (exists && REUSE) {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  reuse = (await c.query<{ n: number }>('select count(*)::int as n from ipv4_indicators')).rows[0]!.n === N;
  await c.end();
}
const { openStore } = await import('../apps/server/src/store/index.ts');
if (!reuse) {
  await admin.query(`drop database if exists ${dbName} with (force)`);
  await admin.query(`create database ${dbName}`);
  const migrated = await openStore({ databaseUrl: dbUrl });
  await migrated.close();
  const l0 = load1();
  const g = await copyIpv4(dbUrl, N, { log: (line) => console.log(`generator: ${line}`) });
  genLine = `Generated ${fmt(g.indicators)} indicators and ${fmt(g.reports)} reports (200 organizations) with bench/gen-ipv4-copy.ts: COPY ${g.seconds.copy.toFixed(1)} s, indexes ${g.seconds.indexes.toFixed(1)} s, vacuum analyze ${g.seconds.analyze.toFixed(1)} s (load average ${l0.toFixed(2)} before, ${load1().toFixed(2)} after).`;
  // Kept with the data, for a later --reuse to report how it was made.
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  await c.query('create table bench_generated (line text not null)');
  await c.query('insert into bench_generated values ($1)', [genLine]);
  await c.end();
} else {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  const made = await c.query<{ line: string }>("select line from bench_generated where to_regclass('bench_generated') is not null").catch(() => ({ rows: [] as Array<{ line: string }> }));
  await c.end();
  genLine = `Reused ${dbName}, kept by an earlier run (--keep). ${made.rows[0]?.line ?? ''}`;
}
console.log(genLine);
const sizes = (await admin.query<{ db: string }>('select pg_database_size($1)::text as db', [dbName])).rows[0]!;
const dbc = new pg.Client({ connectionString: dbUrl });
await dbc.connect();
const rel = (await dbc.query<{ ind: string; rep: string; reports: number }>(
  `select pg_total_relation_size('ipv4_indicators')::text as ind, pg_total_relation_size('ipv4_reports')::text as rep, (select count(*)::int from ipv4_reports) as reports`,
)).rows[0]!;
await dbc.end();
const GB = 1024 ** 3;
const sizeLine = `PostgreSQL on disk: database ${(Number(sizes.db) / GB).toFixed(2)} GB (pg_database_size), of which ipv4_indicators ${(Number(rel.ind) / GB).toFixed(2)} GB and ipv4_reports (${fmt(rel.reports)} rows) ${(Number(rel.rep) / GB).toFixed(2)} GB with their indexes; load ${loadCell(load1())}.`;
console.log(sizeLine);

// 2. Keys and agents (one organization holds the agents; its decisions reach all of them).
const store = await openStore({ databaseUrl: dbUrl });
const { createApiKey, createOrganization, createUser } = await import('../apps/server/src/services/operators/admin.ts');
const { buildApp } = await import('../apps/server/src/app.ts');
const { testConfig } = await import('../apps/server/src/config.ts');
const stamp = Date.now();
const org = await createOrganization(store, { name: `bench-scale-${stamp}`, credits: 1_000_000_000 });
const keyOf = async (role: number) => {
  const username = `scale-${stamp}-${role}@bench.example`;
  const user = await createUser(store, { orgGid: org.gid, username, role });
  return { user, key: (await createApiKey(store, { username })).key };
};
const reader = await keyOf(ROLE.reader);
const adminKey = await keyOf(ROLE.admin);
const documents = Array.from({ length: AGENTS }, (_, i) =>
  AgentSettingsDocument.parse({ gaid: `RMP-AGENT-ID-SCALE${org.id}X${String(i).padStart(6, '0')}`, ts: Date.now(), score_threshold: 500, start_from: 0, version: 'v1.0.0', proxy: 'LOCAL', sync_time: 5, maximum_rules: 10_000 }),
);
await store.agents.registerMany(org.id, documents, adminKey.user.username);
const agentRows = await store.agents.list(org.id, AGENTS);
const { randomBytes } = await import('node:crypto');
const records = agentRows.map((r) => ({ jti: randomBytes(16).toString('base64url'), agentId: r.id, issuedBy: adminKey.user.id, gaid: r.gaid }));
await store.agents.recordTokens(records);
// Signed as the API signs them, with the secret the store holds for every replica.
const signer = await buildApp({ config: testConfig({ logLevel: 'silent' }), store, ipv4Mirror: null });
await signer.ready();
const tokens = await Promise.all(records.map((r) => signer.agentTokens.sign({ jti: r.jti, gaid: r.gaid, org: org.gid }, null)));
await signer.close();
await store.close();
// A listed address to look up: indicator 1 of the generator.
const sampleIp = genIndicators(1, 200, 0).next().value!.network.replace(/\/32$/, '');

// 3. Three replicas, started one after the other.
buildServerBundle();
const ports = await Promise.all(Array.from({ length: REPLICAS }, () => freePort()));
const env = { DATABASE_URL: dbUrl, RATE_LIMIT_REPLICAS: String(REPLICAS), RATE_LIMIT_PER_MINUTE: '1000000000', AUTH_UNKNOWN_KEYS_PER_MINUTE: '1000000' };
const replicas: Replica[] = [];
interface ReplicaRow {
  port: number;
  startMs: number;
  mirrorMs: number;
  mirrorMb: number;
  mirrorCpu: number;
  whileLoading: string;
  rssMb: number;
  loadAtMirror: number;
  list?: { seconds: number; lines: number; pages: number; mb: number; peakRss: number; load: number; retries: number };
  lookup?: { rps: number; p50: number; p99: number; bad: number; load: number };
  agentsRss?: number;
}
const rows: ReplicaRow[] = [];
try {
  for (const port of ports) {
    const r = await startReplica(env, port, { lookupPath: `/api/v1/ips/${sampleIp}`, listPath: '/api/v1/ipv4/1', key: reader.key });
    replicas.push(r);
    const loaded = await r.mirrorLoaded;
    await new Promise((res) => setTimeout(res, 2000));
    rows.push({ port, startMs: r.listeningMs, mirrorMs: loaded.ms, mirrorMb: loaded.mb, mirrorCpu: loaded.cpuSeconds, whileLoading: r.whileLoading, rssMb: rssMb(r.child.pid!), loadAtMirror: load1() });
    console.log(`replica :${port}: listening after ${r.listeningMs} ms, mirror ${fmt(loaded.rows)} rows ${loaded.mb} MB in ${loaded.ms} ms (${loaded.cpuSeconds.toFixed(1)} s CPU since start); RSS ${rssMb(r.child.pid!).toFixed(0)} MB; while loading: ${r.whileLoading}`);
  }

  // 4. The full list and look-ups, per replica.
  for (const [i, r] of replicas.entries()) {
    const row = rows[i]!;
    let page: string | null = null;
    let lines = 0;
    let bytes = 0;
    let pages = 0;
    let peak = 0;
    let listRetries = 0;
    const t0 = performance.now();
    do {
      const url = `${r.base}/api/v1/ipv4/1${page ? `?page=${encodeURIComponent(page)}` : ''}`;
      // A kept-alive connection the replica closed while idle (since the probes at its start)
      // fails once: asked again on a new one. A replica that died fails the bench.
      const res: Response = await fetch(url, { headers: { authorization: reader.key } }).catch((err: unknown) => {
        if (r.child.exitCode !== null) throw err;
        listRetries += 1;
        return fetch(url, { headers: { authorization: reader.key, connection: 'close' } });
      });
      if (res.status !== 200) throw new Error(`/ipv4/1: ${res.status} ${await res.text()}`);
      const text = await res.text();
      bytes += text.length;
      lines += text.length === 0 ? 0 : text.split('\n').filter(Boolean).length;
      pages += 1;
      page = res.headers.get('next_page');
      peak = Math.max(peak, rssMb(r.child.pid!));
    } while (page);
    row.list = { seconds: (performance.now() - t0) / 1000, lines, pages, mb: bytes / 1e6, peakRss: peak, load: load1(), retries: listRetries };
    console.log(`replica :${row.port}: /ipv4/1 ${fmt(lines)} lines in ${pages} pages, ${row.list.seconds.toFixed(1)} s; RSS peak ${peak.toFixed(0)} MB`);
    const l0 = load1();
    const c = runClient(`${r.base}/api/v1/ips/${sampleIp}`, { connections: CONNECTIONS, duration: LOOKUP_SECONDS, headers: { authorization: reader.key } });
    row.lookup = { rps: c.requests / c.seconds, p50: c.p50, p99: c.p99, bad: c.bad, load: Math.max(l0, load1()) };
    console.log(`replica :${row.port}: GET /ips/{ip} ${fmt(row.lookup.rps)} req/s, p50 ${c.p50} ms, p99 ${c.p99} ms, non-2xx + errors ${c.bad}`);
  }

  // 5. Agents across the replicas, decisions pushed to all of them.
  const perProcess = Math.ceil(AGENTS / CLIENT_PROCESSES);
  const clients: ChildProcess[] = [];
  const messages = new Map<ChildProcess, Array<(m: unknown) => void>>();
  const c0 = performance.now();
  let closedDuringRun = 0;
  await Promise.all(
    Array.from({ length: CLIENT_PROCESSES }, async (_, p) => {
      const slice = tokens.slice(p * perProcess, (p + 1) * perProcess).map((token, j) => {
        const r = replicas[(p * perProcess + j) % REPLICAS]!;
        return { url: `${r.base.replace('http', 'ws')}/api/v1/agents/sync`, token };
      });
      const child = spawn(process.execPath, ['--import', 'tsx', join(here, '_scale-agents.ts')], { stdio: ['pipe', 'inherit', 'inherit', 'ipc'] });
      clients.push(child);
      messages.set(child, []);
      child.on('message', (m: { type: string }) => {
        if (m.type === 'closed') closedDuringRun += 1;
        else messages.get(child)!.shift()?.(m);
      });
      const connected = new Promise((res) => messages.get(child)!.push(res));
      child.stdin!.end(JSON.stringify(slice));
      await connected;
    }),
  );
  const connectSeconds = (performance.now() - c0) / 1000;
  await new Promise((res) => setTimeout(res, 3000));
  for (const [i, r] of replicas.entries()) rows[i]!.agentsRss = rssMb(r.child.pid!);
  console.log(`${fmt(AGENTS)} agents connected in ${connectSeconds.toFixed(1)} s; RSS ${rows.map((r) => r.agentsRss!.toFixed(0)).join(', ')} MB`);
  const latencies: number[] = [];
  const pushLoads: number[] = [];
  let missing = 0;
  for (let d = 0; d < DECISIONS; d++) {
    const ip = `198.51.${100 + Math.floor(d / 250)}.${1 + (d % 250)}`;
    const r = replicas[d % REPLICAS]!;
    pushLoads.push(load1());
    const t0 = performance.timeOrigin + performance.now();
    const res = await fetch(`${r.base}/api/v1/ips/${ip}`, { method: 'PUT', headers: { authorization: adminKey.key, 'content-type': 'application/json' }, body: JSON.stringify({ decision: 1 }) });
    if (res.status !== 200) throw new Error(`PUT /ips/${ip}: ${res.status} ${await res.text()}`);
    const times = await waitFor(`decision ${ip} at every agent`, async () => {
      const all = await Promise.all(clients.map((child) => new Promise<{ times: Array<number | null> }>((res2) => { messages.get(child)!.push(res2 as (m: unknown) => void); child.send({ type: 'collect', indicator: ip }); })));
      const flat = all.flatMap((a) => a.times);
      return flat.every((t) => t !== null) ? (flat as number[]) : false;
    }, 60_000, 100).catch(() => null);
    if (!times) {
      missing += 1;
      continue;
    }
    for (const t of times) latencies.push(t - t0);
  }
  latencies.sort((a, b) => a - b);
  for (const child of clients) child.send({ type: 'stop' });
  const push = { n: latencies.length, p50: pct(latencies, 0.5), p99: pct(latencies, 0.99), max: latencies.at(-1)!, load: Math.max(...pushLoads), connectSeconds, missing, closedDuringRun };
  console.log(`push: ${fmt(push.n)} receipts, p50 ${push.p50.toFixed(0)} ms, p99 ${push.p99.toFixed(0)} ms, max ${push.max.toFixed(0)} ms; decisions not at every agent within 60 s: ${missing}`);

  // 6. The results file.
  const out = [
    `# Ten million indicators on three replicas (bench/scale-10m.ts)`,
    '',
    `Run ${new Date().toISOString()}, Node ${process.version}, ${pgVersion} (the machine's shared server, DATABASE_URL), ${cpus().length} cores shared with other work while this ran: every row carries the 1-minute load average when it was taken, marked above 2.`,
    `Replicas: \`node apps/server/dist/main.mjs\` (the bundle \`npm start\` runs), RATE_LIMIT_REPLICAS=3, started one after the other on one PostgreSQL.`,
    '',
    genLine,
    sizeLine,
    '',
    '## Per replica',
    '',
    `| replica | mirror loaded (target ≤ 30 s) | replica CPU from start to loaded | mirror typed arrays | RSS after the mirror loaded | while loading (SQL) | GET /ipv4/1, every page | RSS peak during the list | GET /ips/{ip} (${CLIENT}, ${CONNECTIONS} connections, ${LOOKUP_SECONDS} s) | load: mirror / list / look-ups |`,
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r, i) => {
      const verdict = r.mirrorMs <= 30_000 ? 'met' : 'missed';
      return `| r${i + 1} | ${(r.mirrorMs / 1000).toFixed(1)} s (${verdict}) | ${r.mirrorCpu.toFixed(1)} s | ${r.mirrorMb} MB | ${r.rssMb.toFixed(0)} MB | ${r.whileLoading} | ${fmt(r.list!.lines)} lines, ${r.list!.pages} pages, ${r.list!.mb.toFixed(0)} MB in ${r.list!.seconds.toFixed(1)} s${r.list!.retries ? ` (${r.list!.retries} request asked again on a new connection)` : ''} | ${r.list!.peakRss.toFixed(0)} MB | ${fmt(r.lookup!.rps)} req/s, p50 ${r.lookup!.p50} ms, p99 ${r.lookup!.p99} ms, non-2xx + errors ${r.lookup!.bad} | ${loadCell(r.loadAtMirror)} / ${loadCell(r.list!.load)} / ${loadCell(r.lookup!.load)} |`;
    }),
    '',
    `Mirror load time is the replica's own log line (\`ipv4 list mirror loaded\`, from its start in the background to ready); "listening" came first (${rows.map((r) => `${r.startMs} ms`).join(', ')} after spawn), and until the mirror is ready lists and look-ups read SQL. Look-ups ask for one listed address, round after round.`,
    '',
    `## ${fmt(AGENTS)} agents across the replicas`,
    '',
    `${fmt(AGENTS)} sync-channel clients in ${CLIENT_PROCESSES} client processes (bench/_scale-agents.ts), agent i on replica i mod 3, connected in ${connectSeconds.toFixed(1)} s. ${DECISIONS} decisions (PUT /ips/{ip}, round robin over the replicas) each reach every client.`,
    '',
    '| measure | figure | load |',
    '|---|---|---|',
    `| decision → each of ${fmt(AGENTS)} clients (${fmt(push.n)} receipts) | p50 ${push.p50.toFixed(0)} ms, p99 ${push.p99.toFixed(0)} ms, max ${push.max.toFixed(0)} ms | ${loadCell(push.load)} (highest at a decision) |`,
    `| decisions not at every client within 60 s | ${missing} of ${DECISIONS} | |`,
    `| connections closed during the run | ${closedDuringRun} | |`,
    ...rows.map((r, i) => {
      const d = r.agentsRss! - r.rssMb;
      return `| r${i + 1} RSS with ~${fmt(AGENTS / REPLICAS)} agents | ${r.agentsRss!.toFixed(0)} MB (${d >= 0 ? '+' : '−'}${Math.abs(d).toFixed(0)} MB from the RSS after the mirror loaded; the collection of the list's and look-ups' garbage hides the connections' cost, which bench/results/sync.md measures alone) | |`;
    }),
    '',
    `Command: \`npm run bench:scale -- ${args.join(' ')}\``,
    '',
  ].join('\n');
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(join(here, 'results', `scale-${N >= 1_000_000 ? `${N / 1_000_000}m` : N}.md`), out);
  console.log(out);
} finally {
  for (const r of replicas) await r.stop();
  if (!KEEP) await admin.query(`drop database if exists ${dbName} with (force)`);
  await admin.end();
}
