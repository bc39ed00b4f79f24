/*
 * What durability costs the embedded store: POST /ips reports/s with 16 concurrent clients on
 * PGlite on disk, as it ships (fsync off, no fsync in its file system: "none") and as the server
 * runs it (fsync on every commit: "fsync"). Runs alternate none/fsync so that a loaded machine's
 * drift hits both alike; each figure is the median of its rounds. Server and client share this
 * process (the control plane as buildApp builds it, auth, coins and rate limiting on).
 *
 * The ceiling rows drive the durable store alone (no HTTP, no client): report batches of a fixed
 * size written back to back through the same ingest transaction, one fsync each.
 *
 * Then the same with every side in a process of its own (issue 35 item 5): the control plane from
 * its bundle on a durable data directory (bench/_pglite-serve.mjs, as `npm start` opens it) pinned
 * to core 0, and Debian's wrk posting the reports (a Lua script: half new addresses, half held,
 * rotating the organizations' keys) pinned to core 1. The verdicts are those rounds'.
 *
 * Writes bench/results/pglite-ingest.md with the verdicts (durable: >= 1,000 reports/s and p99 <=
 * 250 ms at 16 clients, client in its own process) and the load average.
 *
 *   npx tsx bench/pglite-ingest.ts [--rounds 3] [--duration 8] [--connections 16]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { buildApp } from '../apps/server/src/app.ts';
import { testConfig } from '../apps/server/src/config.ts';
import { createApiKey, createOrganization, createUser } from '../apps/server/src/services/operators/admin.ts';
import { V32_INGEST_RULES } from '../apps/server/src/services/ipv4/ingest.ts';
import { openPglite } from '../apps/server/src/store/pglite-driver.ts';
import { migrate, storeOver } from '../apps/server/src/store/index.ts';
import { flag } from './_args.ts';
import { announced } from './_ipv4-child.ts';
import { runClient } from './_load-client.ts';
import { CLIENT_CPUS, PINNED, SERVER_CPUS, TICK, processTicks, spawnNodePinned, type Side } from './_pinned.ts';
import { SERVER_RUNTIME, buildServerBundle } from './_server-bundle.ts';

const ROUNDS = flag('rounds', 3);
const DURATION = flag('duration', 8);
const CONNECTIONS = flag('connections', 16);

/** One timed run; cpuMs: this process's CPU (client and server) per report, which load on the machine barely moves. */
interface Run {
  rps: number;
  p99: number;
  bad: number;
  syncs: number;
  cpuMs: number;
}

async function round(mode: 'none' | 'fsync'): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-bench-pglite-'));
  const db = await openPglite(join(dir, 'data'), { durable: mode === 'fsync' });
  await migrate(db);
  const store = storeOver(db);
  const keys: string[] = [];
  for (let o = 0; o < CONNECTIONS; o += 1) {
    const org = await createOrganization(store, { name: `Bench ${o}`, credits: 1_000_000_000, trust: 0.7 });
    const username = `c${o}@bench.example`;
    await createUser(store, { orgGid: org.gid, username, role: 2 });
    keys.push((await createApiKey(store, { username })).key);
  }
  const app = await buildApp({ config: testConfig({ rateLimitPerMinute: 1_000_000_000, allowNonPublicReports: true }), store, ipv4Mirror: null });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  // Warm-up outside the timed run: a report per key loads the enrichment tables (on first use)
  // and fills the key cache, which a running server has done long before.
  for (const [k, key] of keys.entries()) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: key }, payload: { ip: `11.0.0.${k + 1}`, confidence: 0.7, source: 'ssh' } });
    if (res.statusCode >= 300) throw new Error(`warm-up report: ${res.statusCode} ${res.body}`);
  }
  let n = 0;
  const syncsBefore = db.stats().syncs ?? 0;
  const cpuBefore = process.cpuUsage();
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION,
    requests: [
      {
        method: 'POST',
        path: '/api/v1/ips',
        setupRequest: (req: autocannon.Request) => {
          n += 1;
          // Half new addresses, half reports on ones already held.
          const i = n % 2 === 0 ? n : n - 1;
          return { ...req, headers: { 'content-type': 'application/json', authorization: keys[n % keys.length]! }, body: JSON.stringify({ ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, confidence: 0.7, source: 'ssh' }) };
        },
      },
    ],
  });
  const syncs = (db.stats().syncs ?? 0) - syncsBefore;
  const cpu = process.cpuUsage(cpuBefore);
  await app.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return { rps: result.requests.average, p99: result.latency.p99, bad: result.non2xx + result.errors, syncs, cpuMs: (cpu.user + cpu.system) / 1000 / Math.max(1, result.requests.total) };
}

/** The durable store alone: batches of `size` reports back to back, as the batcher hands them over. */
async function ceiling(size: number): Promise<{ rps: number; cpuMs: number; batchMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-bench-pglite-'));
  const db = await openPglite(join(dir, 'data'));
  await migrate(db);
  const store = storeOver(db);
  const orgIds: number[] = [];
  for (let o = 0; o < CONNECTIONS; o += 1) {
    const org = await createOrganization(store, { name: `Bench ${o}`, credits: 1_000_000_000, trust: 0.7 });
    orgIds.push(Number((await db.query<{ id: number }>('select id from organizations where gid = $1', [org.gid])).rows[0]!.id));
  }
  let n = 0;
  const item = () => {
    n += 1;
    const i = n % 2 === 0 ? n : n - 1;
    const network = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`;
    return { orgId: orgIds[n % orgIds.length]!, network, isNetwork: false, gid: randomUUID(), confidence: 0.7, source: 'ssh', notes: null, addReport: true, decision: null, ipInfo: null };
  };
  let batches = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  while (performance.now() - t0 < DURATION * 1000) {
    await store.ipv4Ingest.ingest(Array.from({ length: size }, item), V32_INGEST_RULES, Math.floor(Date.now() / 1000));
    batches += 1;
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return { rps: (batches * size * 1000) / ms, cpuMs: (cpu.user + cpu.system) / 1000 / (batches * size), batchMs: ms / batches };
}

/** The WRK Lua script of a round: POST /ips, half new addresses, half held ones, keys in turn. */
function postScript(keys: string[]): string {
  return [
    `local keys = { ${keys.map((k) => `"${k}"`).join(', ')} }`,
    'local n = 0',
    'request = function()',
    '  n = n + 1',
    '  local i = n',
    '  if n % 2 == 1 then i = n - 1 end',
    // wrk runs LuaJIT (Lua 5.1): bit operations through its `bit` module.
    '  local body = string.format(\'{"ip":"10.%d.%d.%d","confidence":0.7,"source":"ssh"}\', bit.band(bit.rshift(i, 16), 255), bit.band(bit.rshift(i, 8), 255), bit.band(i, 255))',
    '  return wrk.format("POST", "/api/v1/ips", { ["Authorization"] = keys[(n % #keys) + 1], ["Content-Type"] = "application/json" }, body)',
    'end',
    '',
  ].join('\n');
}

/** One round with the server and the client each in a process of its own, pinned to their cores. */
async function processRound(): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-bench-pglite-'));
  const child = spawnNodePinned(join(dirname(fileURLToPath(import.meta.url)), '_pglite-serve.mjs'), {
    cpus: SERVER_CPUS,
    nodeArgs: SERVER_RUNTIME.nodeArgs,
    env: { ...process.env, ...SERVER_RUNTIME.env, BENCH_SERVE: JSON.stringify({ dataDir: join(dir, 'data'), keys: CONNECTIONS }) },
  });
  try {
    const { port, keys } = await announced<{ port: number; keys: string[] }>(child, 'the PGlite server');
    const script = join(dir, 'post.lua');
    writeFileSync(script, postScript(keys));
    const load = loadavg()[0]!;
    const cpu0 = processTicks(child.pid!);
    const run = runClient(`http://127.0.0.1:${port}/`, { connections: CONNECTIONS, duration: DURATION, cpus: CLIENT_CPUS, script });
    return { run, cpu: (processTicks(child.pid!) - cpu0) / TICK, pg: 0, load };
  } finally {
    if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM'));
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const started = new Date().toISOString();
const load0 = loadavg();
const runs: Record<'none' | 'fsync', Run[]> = { none: [], fsync: [] };
for (let r = 0; r < ROUNDS; r += 1) {
  for (const mode of ['none', 'fsync'] as const) {
    const run = await round(mode);
    runs[mode].push(run);
    console.log(`round ${r + 1} ${mode}: ${Math.round(run.rps)} reports/s, p99 ${run.p99} ms, non-2xx+errors ${run.bad}, fsyncs ${run.syncs}, CPU ${run.cpuMs.toFixed(2)} ms/report`);
  }
}
buildServerBundle();
const separate: Side[] = [];
for (let r = 0; r < ROUNDS; r += 1) {
  const side = await processRound();
  separate.push(side);
  console.log(
    `round ${r + 1}, separate processes: ${Math.round(side.run.requests / side.run.seconds)} reports/s, p99 ${side.run.p99} ms, non-2xx+errors ${side.run.bad}, server CPU ${((1000 * side.cpu) / Math.max(1, side.run.requests)).toFixed(2)} ms/report; load ${side.load.toFixed(2)}`,
  );
}
const ceilings: Array<{ size: number; rps: number; cpuMs: number; batchMs: number }> = [];
for (const size of [1, 8, 16]) {
  const c = await ceiling(size);
  ceilings.push({ size, ...c });
  console.log(`ceiling, batches of ${size}: ${Math.round(c.rps)} reports/s, ${c.batchMs.toFixed(2)} ms per batch, CPU ${c.cpuMs.toFixed(2)} ms/report`);
}
const none = median(runs.none.map((x) => x.rps));
const fsync = median(runs.fsync.map((x) => x.rps));
console.log(`median: none ${Math.round(none)} reports/s, fsync ${Math.round(fsync)} reports/s, ratio ${(fsync / none).toFixed(2)} (${CONNECTIONS} connections, ${DURATION} s x ${ROUNDS})`);

const sepRps = separate.map((x) => x.run.requests / x.run.seconds);
const sepP99 = separate.map((x) => x.run.p99);
const sepBad = separate.reduce((a, x) => a + x.run.bad, 0);
const sepLoaded = separate.some((x) => x.load > 2);
const perReport = (x: Side, cpu: number) => ((1000 * cpu) / Math.max(1, x.run.requests)).toFixed(2);
const range = (xs: number[]) => `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))}`;
const fmt = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
const rows = (['none', 'fsync'] as const).map(
  (mode) => `| ${mode === 'none' ? 'PGlite as shipped (no fsync: baseline)' : 'PGlite as the server runs it (fsync per commit)'} | ${Math.round(median(runs[mode].map((x) => x.rps)))} (${range(runs[mode].map((x) => x.rps))}) | ${median(runs[mode].map((x) => x.p99))} (${range(runs[mode].map((x) => x.p99))}) | ${median(runs[mode].map((x) => x.cpuMs)).toFixed(2)} | ${runs[mode].reduce((a, x) => a + x.bad, 0)} |`,
);
writeFileSync(
  join(dirname(fileURLToPath(import.meta.url)), 'results', 'pglite-ingest.md'),
  [
    '# Embedded store ingestion (bench/pglite-ingest.ts)',
    '',
    `Run ${started}, Node ${process.version}, ${ROUNDS} alternating rounds of ${DURATION} s, ${CONNECTIONS} concurrent clients (POST /ips, half new addresses); load average at start ${fmt(load0)}, at end ${fmt(loadavg())} (2 cores; client and server in one process; reports per fsync, the mean batch: ${(median(runs.fsync.map((x) => (x.rps * DURATION) / Math.max(1, x.syncs)))).toFixed(1)}).`,
    '',
    '| store | reports/s median (range) | p99 ms median (range) | CPU ms per report (client + server) | non-2xx + errors |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    'Client and server in one process (above) flatter: the client takes its CPU from the same thread. The same durable store with every side in a process of its own:',
    `the server (bench/_pglite-serve.mjs: the bundle on plain Node, a data directory opened as \`npm start\` opens it) ${PINNED ? 'pinned to core 0' : ''}, Debian's wrk posting the reports (half new addresses, half held; the organizations' keys in turn) ${PINNED ? 'pinned to core 1' : ''}:`,
    '',
    '| round | reports/s | p50 / p99 ms | server CPU ms per report | client CPU ms per report | non-2xx + errors | load average (1 min) |',
    '|---|---|---|---|---|---|---|',
    ...separate.map((x, k) => `| ${k + 1} | ${Math.round(sepRps[k]!)} | ${x.run.p50.toFixed(1)} / ${x.run.p99.toFixed(1)} | ${perReport(x, x.cpu)} | ${perReport(x, x.run.cpuSeconds)} | ${x.run.bad} | ${x.load.toFixed(2)}${x.load > 2 ? ' (above 2: loaded)' : ''} |`),
    '',
    `| target (issue 35, 5) | measured | limit | verdict |`,
    '|---|---|---|---|',
    `| durable reports/s, ${CONNECTIONS} clients, client in its own process | ${Math.round(median(sepRps))} (${range(sepRps)})${sepLoaded ? ', loaded' : ''} | ≥ 1,000 | ${sepBad > 0 ? `missed (${sepBad} non-2xx or errors)` : median(sepRps) >= 1000 ? 'met' : 'missed'} |`,
    `| durable p99, client in its own process | ${median(sepP99).toFixed(1)} ms | ≤ 250 ms | ${median(sepP99) <= 250 ? 'met' : 'missed'} |`,
    '',
    'The durable store alone (no server, no client): report batches of a fixed size through the same ingest transaction, back to back, one fsync each:',
    '',
    '| batch | reports/s | ms per batch | CPU ms per report |',
    '|---|---|---|---|',
    ...ceilings.map((c) => `| ${c.size} | ${Math.round(c.rps)} | ${c.batchMs.toFixed(2)} | ${c.cpuMs.toFixed(2)} |`),
    '',
    `On one free core (1,000 ms over its CPU ms per report) the store alone would take ${ceilings.map((c) => `${Math.round(1000 / c.cpuMs)} reports/s in batches of ${c.size}`).join(', ')}. The whole bench process (server, client and store in one thread) used ${median(runs.fsync.map((x) => x.cpuMs)).toFixed(2)} ms of CPU per durable report at its mean batch: 1,000 reports/s needs it under 1 ms on a free core.`,
    '',
    `Durable reports/s over PGlite as shipped, same run: ${(fsync / none).toFixed(2)} (below 1: what durability costs; one round on a loaded machine can invert it).`,
    '',
    `Command: \`npx tsx bench/pglite-ingest.ts --rounds ${ROUNDS} --duration ${DURATION} --connections ${CONNECTIONS}\``,
    '',
  ].join('\n'),
);
