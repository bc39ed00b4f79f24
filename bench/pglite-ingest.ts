/*
 * The embedded store's ingestion, every side in a process of its own (issue 35 item 5): POST /ips
 * reports/s with 16 concurrent clients against the control plane from its bundle
 * (bench/_pglite-serve.mjs, production's runtime settings) pinned to core 0, Debian's wrk posting
 * the reports (a Lua script: half new addresses, half held, rotating the organizations' keys)
 * pinned to core 1. The baseline is the same server on PGlite as it ships ("none": no fsync), the
 * subject PGlite as the server runs it ("fsync": every commit on disk); rounds alternate them so
 * that a loaded machine's drift hits both alike; medians, and the load average per run.
 *
 * The ceiling rows drive the durable store alone (no HTTP, no client): report batches of a fixed
 * size written back to back through the same ingest transaction, one fsync each.
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
import { createOrganization } from '../apps/server/src/services/operators/admin.ts';
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
async function processRound(mode: 'none' | 'fsync'): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-bench-pglite-'));
  const child = spawnNodePinned(join(dirname(fileURLToPath(import.meta.url)), '_pglite-serve.mjs'), {
    cpus: SERVER_CPUS,
    nodeArgs: SERVER_RUNTIME.nodeArgs,
    env: { ...process.env, ...SERVER_RUNTIME.env, BENCH_SERVE: JSON.stringify({ dataDir: join(dir, 'data'), keys: CONNECTIONS, durable: mode === 'fsync' }) },
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
buildServerBundle();
const runs: Record<'none' | 'fsync', Side[]> = { none: [], fsync: [] };
for (let r = 0; r < ROUNDS; r += 1) {
  // The order alternates, so that neither store always runs on a warmer or quieter machine.
  for (const mode of r % 2 === 0 ? (['none', 'fsync'] as const) : (['fsync', 'none'] as const)) {
    const side = await processRound(mode);
    runs[mode].push(side);
    console.log(
      `round ${r + 1} ${mode}: ${Math.round(side.run.requests / side.run.seconds)} reports/s, p99 ${side.run.p99} ms, non-2xx+errors ${side.run.bad}, server CPU ${((1000 * side.cpu) / Math.max(1, side.run.requests)).toFixed(2)} ms/report; load ${side.load.toFixed(2)}`,
    );
  }
}
const ceilings: Array<{ size: number; rps: number; cpuMs: number; batchMs: number }> = [];
for (const size of [1, 8, 16]) {
  const c = await ceiling(size);
  ceilings.push({ size, ...c });
  console.log(`ceiling, batches of ${size}: ${Math.round(c.rps)} reports/s, ${c.batchMs.toFixed(2)} ms per batch, CPU ${c.cpuMs.toFixed(2)} ms/report`);
}
const rpsOf = (x: Side) => x.run.requests / x.run.seconds;
const separate = runs.fsync;
const sepRps = separate.map(rpsOf);
const sepP99 = separate.map((x) => x.run.p99);
const sepBad = separate.reduce((a, x) => a + x.run.bad, 0);
const sepLoaded = separate.some((x) => x.load > 2);
const none = median(runs.none.map(rpsOf));
const fsync = median(sepRps);
const perReport = (x: Side, cpu: number) => ((1000 * cpu) / Math.max(1, x.run.requests)).toFixed(2);
const range = (xs: number[]) => `${Math.round(Math.min(...xs))}–${Math.round(Math.max(...xs))}`;
const fmt = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
const serverCpuMs = median(separate.map((x) => (1000 * x.cpu) / Math.max(1, x.run.requests)));
writeFileSync(
  join(dirname(fileURLToPath(import.meta.url)), 'results', 'pglite-ingest.md'),
  [
    '# Embedded store ingestion (bench/pglite-ingest.ts)',
    '',
    `Run ${started}, Node ${process.version}; every side a process of its own: the server (bench/_pglite-serve.mjs: the bundle on plain Node with production's runtime settings, a data directory opened as \`npm start\` opens it) ${PINNED ? 'pinned to core 0' : ''}, Debian's wrk posting the reports (${CONNECTIONS} connections; half new addresses, half held; the organizations' keys in turn) ${PINNED ? 'pinned to core 1' : ''}.`,
    `${ROUNDS} rounds of ${DURATION} s alternating the baseline (PGlite as it ships: no fsync) and the store as the server runs it (fsync on every commit); load average (1, 5, 15 min) at start ${fmt(load0)}, at end ${fmt(loadavg())} (2 cores), and per run below.`,
    '',
    '| round | store | reports/s | p50 / p99 ms | server CPU ms per report | client CPU ms per report | non-2xx + errors | load average (1 min) |',
    '|---|---|---|---|---|---|---|---|',
    ...runs.fsync.flatMap((_, k) =>
      (['none', 'fsync'] as const).map((mode) => {
        const x = runs[mode][k]!;
        return `| ${k + 1} | ${mode === 'none' ? 'PGlite as shipped (no fsync: baseline)' : 'as the server runs it (fsync per commit)'} | ${Math.round(rpsOf(x))} | ${x.run.p50.toFixed(1)} / ${x.run.p99.toFixed(1)} | ${perReport(x, x.cpu)} | ${perReport(x, x.run.cpuSeconds)} | ${x.run.bad} | ${x.load.toFixed(2)}${x.load > 2 ? ' (above 2: loaded)' : ''} |`;
      }),
    ),
    '',
    `Durable reports/s over PGlite as shipped (medians): ${(fsync / none).toFixed(2)} (${Math.round(fsync)} over ${Math.round(none)}; below 1: what durability costs).`,
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
    `On one free core (1,000 ms over its CPU ms per report) the store alone would take ${ceilings.map((c) => `${Math.round(1000 / c.cpuMs)} reports/s in batches of ${c.size}`).join(', ')}. The durable server used ${serverCpuMs.toFixed(2)} ms of CPU per report (median of its rounds): 1,000 reports/s needs it under 1 ms on its core.`,
    '',
    `Command: \`npx tsx bench/pglite-ingest.ts --rounds ${ROUNDS} --duration ${DURATION} --connections ${CONNECTIONS}\``,
    '',
  ].join('\n'),
);
