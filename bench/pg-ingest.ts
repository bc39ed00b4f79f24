/*
 * PostgreSQL ingestion against a constant route, every side in a process of its own (issue 22,
 * target 5, PostgreSQL part; restated as issue 35 wants every bench): POST /api/v1/ips reports/s
 * acknowledged after commit over `--rounds` alternating rounds (the constant route first in odd
 * rounds), so that a loaded machine's drift hits both alike. Verdict: the ratio is >= 0.1 in
 * every round.
 *
 *   - PostgreSQL: a private cluster (bench/_pg-cluster.ts: fsync on, as a packaged server)
 *     holding `--n` generated indicators (bench/gen-ipv4.ts) from 200 organizations; not pinned;
 *   - the control plane from its bundle (bench/_ipv4-serve.mjs: auth, coins, rate limiting, the
 *     list mirror on), pinned to core 0;
 *   - the constant route (bench/_nowork-server.mjs: fastify answering every POST with the
 *     recorded answer of a report, 201 and its headers, doing no work), pinned to core 0 too;
 *   - the load client, Debian's wrk with a Lua script posting the reports (half on new addresses
 *     never sent before, half on held ones, rotating over 32 organizations' contributor keys), the
 *     same script against both, pinned to core 1.
 * Each row gives the CPU per request of the serving process, the client and the cluster, the load
 * average (1 min) when each run began (rows above 2 marked), and what the report batches did (from
 * the server's /metrics).
 *
 * Writes bench/results/pg-ingest.md.
 *
 *   npx tsx bench/pg-ingest.ts [--rounds 5] [--duration 5] [--connections 16] [--n 100000]
 *   BENCH_CPU_PROF=<dir> runs the server with --cpu-prof and writes its profile into <dir>.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flag } from './_args.ts';
import { startIpv4Server } from './_ipv4-child.ts';
import { CLIENT, runClient } from './_load-client.ts';
import { luaString, measureSide, startNoWork } from './_nowork.ts';
import { CLIENT_CPUS, PINNED, SERVER_CPUS, rps, type Side } from './_pinned.ts';
import { startPgCluster } from './_pg-cluster.ts';
import { buildServerBundle } from './_server-bundle.ts';
import { BENCH_ORGS, benchDbUrl, benchIp, generateIpv4 } from './gen-ipv4.ts';

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = flag('rounds', 5);
const DURATION = flag('duration', 5);
const CONNECTIONS = flag('connections', 16);
const N = flag('n', 100_000);
const KEYS = 32;
const TARGET = 0.1;
/** gen-ipv4.ts's address multiplier (benchIp), split in 16-bit halves so that Lua's doubles stay exact. */
const MULT = 2_654_435_761;

interface Batches {
  count: number;
  /** Mean reports per batch. */
  size: number;
  /** Mean ms per batch: the statements (begin to the last one) and the commit. */
  statementsMs: number;
  commitMs: number;
}

interface Round {
  base: Side;
  ingest: Side;
  batches: Batches;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const span = (xs: number[], digits: number) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;
const us = (cpuSeconds: number, s: Side) => (1e6 * cpuSeconds) / Math.max(1, s.run.requests);
const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '—');

/** The report batches' histogram sums and counts of the server's /metrics. */
async function batchCounters(appUrl: string): Promise<Record<string, number>> {
  const body = await (await fetch(`${appUrl}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of body.matchAll(/^(rampart_ipv4_ingest_batch_\w+?_(?:sum|count))(?:\{phase="(\w+)"\})? (\S+)$/gm)) out[`${m[1]}${m[2] ? `:${m[2]}` : ''}`] = Number(m[3]);
  return out;
}

function batchesBetween(before: Record<string, number>, after: Record<string, number>): Batches {
  const delta = (key: string) => (after[key] ?? 0) - (before[key] ?? 0);
  const count = delta('rampart_ipv4_ingest_batch_reports_count');
  const phase = (name: string) => (1000 * delta(`rampart_ipv4_ingest_batch_phase_seconds_sum:${name}`)) / Math.max(1, count);
  return { count, size: delta('rampart_ipv4_ingest_batch_reports_sum') / Math.max(1, count), statementsMs: phase('begin') + phase('lock') + phase('write'), commitMs: phase('commit') };
}

/**
 * The wrk script of one run: POST /ips, even requests on a new address (benchIp past `fresh0`,
 * never sent before), odd ones on a held address (benchIp of 1..N), keys in turn.
 */
function postScript(keys: string[], fresh0: number, held0: number): string {
  return [
    `local keys = { ${keys.map(luaString).join(', ')} }`,
    `local fresh, held, n = ${fresh0}, ${held0}, 0`,
    `local MHI, MLO, N = ${Math.floor(MULT / 65536)}, ${MULT % 65536}, ${N}`,
    // benchIp: (g * MULT) mod 2^32, exact in doubles when taken in 16-bit halves.
    'local function ip(g)',
    '  local x = ((g * MHI) % 65536 * 65536 + g * MLO) % 4294967296',
    '  return string.format("%d.%d.%d.%d", math.floor(x / 16777216), math.floor(x / 65536) % 256, math.floor(x / 256) % 256, x % 256)',
    'end',
    'request = function()',
    '  n = n + 1',
    '  local g',
    '  if n % 2 == 0 then fresh = fresh + 1; g = fresh else held = held + 1; g = 1 + (held * 7919) % N end',
    '  local body = string.format(\'{"ip":"%s","confidence":0.8,"source":"bench","lid":%d}\', ip(g), n)',
    '  return wrk.format("POST", "/api/v1/ips", { ["Authorization"] = keys[(n % #keys) + 1], ["Content-Type"] = "application/json" }, body)',
    'end',
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const started = new Date().toISOString();
  const load0 = loadavg();
  const cluster = await startPgCluster();
  await generateIpv4(cluster.url, N, true);
  buildServerBundle();
  const work = mkdtempSync(join(tmpdir(), 'rampart-bench-pg-ingest-'));
  const orgGids = Array.from({ length: KEYS }, (_, o) => `RMP-GID-BENCH${(o * 6) % BENCH_ORGS}`);
  const server = await startIpv4Server({ url: benchDbUrl(cluster.url, N).url, orgGids, free: false, cpus: SERVER_CPUS });
  const appUrl = `http://127.0.0.1:${server.ready.app}`;
  // The constant route answers with a report's own answer (status, headers, body).
  const sample = await fetch(`${appUrl}/api/v1/ips`, {
    method: 'POST',
    headers: { authorization: server.ready.contributors[0]!, 'content-type': 'application/json' },
    body: JSON.stringify({ ip: benchIp(N + 1), confidence: 0.8, source: 'bench' }),
  });
  const constant = await startNoWork(sample, work);
  // New addresses start past the generated ones and the sample; each run moves past what it sent.
  let fresh = N + 1;
  let held = 0;
  const script = join(work, 'post.lua');
  const side = (which: 'ingest' | 'constant'): Side => {
    writeFileSync(script, postScript(server.ready.contributors, fresh, held));
    const side = measureSide(which === 'ingest' ? server.child.pid! : constant.pid, `${which === 'ingest' ? appUrl : constant.url}/`, { connections: CONNECTIONS, duration: DURATION, script }, cluster.cpuTicks);
    const run = side.run;
    if (which === 'ingest') {
      fresh += run.requests + CONNECTIONS;
      held += run.requests + CONNECTIONS;
    }
    return side;
  };
  const rounds: Round[] = [];
  let settled = 0;
  try {
    // Warm both (JIT, pools, the key cache, enrichment on first use), not counted; then the
    // server's start-up jobs (rollup band snapshots) and autovacuum finish before anything is timed.
    side('ingest');
    runClient(`${constant.url}/`, { connections: CONNECTIONS, duration: 2, cpus: CLIENT_CPUS, script });
    settled = await cluster.quiet();
    console.log(`PostgreSQL quiet after ${settled.toFixed(0)} s`);
    for (let r = 0; r < ROUNDS; r += 1) {
      const order: Array<'constant' | 'ingest'> = r % 2 === 0 ? ['constant', 'ingest'] : ['ingest', 'constant'];
      const done: Partial<Record<'constant' | 'ingest', Side>> = {};
      let batches: Batches | undefined;
      for (const which of order) {
        const counters = which === 'ingest' ? await batchCounters(appUrl) : undefined;
        done[which] = side(which);
        if (counters) batches = batchesBetween(counters, await batchCounters(appUrl));
      }
      const round = { base: done.constant!, ingest: done.ingest!, batches: batches! };
      rounds.push(round);
      const i = round.ingest;
      console.log(
        `round ${r + 1}: constant ${rps(round.base).toFixed(0)} req/s, POST /ips ${rps(i).toFixed(0)} reports/s (${i.run.bad} bad), ratio ${(rps(i) / rps(round.base)).toFixed(3)}; ` +
          `CPU µs/report server ${us(i.cpu, i).toFixed(0)}, client ${us(i.run.cpuSeconds, i).toFixed(0)}, PostgreSQL ${us(i.pg, i).toFixed(0)}; ` +
          `${round.batches.count} batches of ${round.batches.size.toFixed(1)}, ${round.batches.statementsMs.toFixed(2)} / ${round.batches.commitMs.toFixed(2)} ms; load ${round.base.load.toFixed(2)}/${i.load.toFixed(2)}`,
      );
    }
  } finally {
    await constant.stop();
    await server.stop();
    rmSync(work, { recursive: true, force: true });
    await cluster.stop();
  }
  writeResults(rounds, { started, load0, settled, cluster: cluster.describe() });
}

function writeResults(rounds: Round[], run: { started: string; load0: number[]; settled: number; cluster: string }): void {
  const ratios = rounds.map((x) => rps(x.ingest) / rps(x.base));
  const worst = Math.min(...ratios);
  const bad = rounds.reduce((a, x) => a + x.ingest.run.bad, 0);
  const loaded = rounds.some((x) => Math.max(x.base.load, x.ingest.load) > 2);
  const verdict = worst >= TARGET && bad === 0 ? 'met' : 'missed';
  const cpuOf = (s: Side) => us(s.cpu, s) + us(s.run.cpuSeconds, s) + us(s.pg, s);
  const cpuCeiling = median(rounds.map((x) => cpuOf(x.base))) / median(rounds.map((x) => cpuOf(x.ingest)));
  const fmtLoad = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  const md = [
    '# PostgreSQL ingestion (bench/pg-ingest.ts)',
    '',
    `Run ${run.started}, Node ${process.version}; ${run.cluster}; ${N.toLocaleString('en')} generated indicators (bench/gen-ipv4.ts) from ${BENCH_ORGS} organizations.`,
    `Every side a process of its own: the control plane (server bundle on plain Node; auth, coins, rate limiting and the list mirror on) and the constant route`,
    `(a fastify server answering every POST with a report's recorded status, headers and body, doing no work) ${PINNED ? 'pinned to core 0' : '(not pinned: one core)'};`,
    `the load client (${CLIENT === 'wrk' ? "Debian's wrk, one thread, a Lua script posting the reports: half on new addresses never sent before, half on held ones, " + KEYS + " organizations' contributor keys in turn; the same script against both" : CLIENT}) ${PINNED ? 'pinned to core 1' : ''}; PostgreSQL not pinned.`,
    `${CONNECTIONS} connections, ${DURATION} s per run, ${rounds.length} rounds alternating (the constant route first in odd rounds). A report is acknowledged after its batch committed. Load average at start ${fmtLoad(run.load0)}; the load average (1 min) when each run began is given, rows above 2 marked. Timed runs began once the cluster was quiet (${run.settled.toFixed(0)} s after the warm-up).`,
    '',
    '| round | constant req/s | POST /ips reports/s | ratio | p50 / p99 ms | non-2xx + errors | batches × mean reports | ms per batch: statements / commit | CPU µs/report: server / client / PostgreSQL | CPU µs/request of the constant route: server / client | load average: constant / POST |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rounds.map((x, k) => {
      const i = x.ingest;
      const l = Math.max(x.base.load, i.load);
      return `| ${k + 1} | ${Math.round(rps(x.base)).toLocaleString('en')} | ${Math.round(rps(i)).toLocaleString('en')} | ${ratios[k]!.toFixed(3)} | ${ms(i.run.p50)} / ${ms(i.run.p99)} | ${i.run.bad} | ${x.batches.count.toLocaleString('en')} × ${x.batches.size.toFixed(1)} | ${x.batches.statementsMs.toFixed(2)} / ${x.batches.commitMs.toFixed(2)} | ${us(i.cpu, i).toFixed(0)} / ${us(i.run.cpuSeconds, i).toFixed(0)} / ${us(i.pg, i).toFixed(0)} | ${us(x.base.cpu, x.base).toFixed(0)} / ${us(x.base.run.cpuSeconds, x.base).toFixed(0)} | ${x.base.load.toFixed(2)} / ${i.load.toFixed(2)}${l > 2 ? ' (above 2: loaded)' : ''} |`;
    }),
    '',
    `Median: constant ${Math.round(median(rounds.map((x) => rps(x.base)))).toLocaleString('en')} req/s, POST /ips ${Math.round(median(rounds.map((x) => rps(x.ingest)))).toLocaleString('en')} reports/s, ratio ${median(ratios).toFixed(3)} (${span(ratios, 3)}).`,
    'CPU µs per request: user + system time from /proc over the run divided by the requests answered, of the serving process, of wrk (its shell\'s `times`) and of the bench\'s private PostgreSQL cluster (its postmaster and children only: bench/_pg-cluster.ts).',
    '',
    '| target (issue 22, 5; issue 35 item 5) | measured | limit | verdict |',
    '|---|---|---|---|',
    `| PostgreSQL ingestion ≥ 0.1 of the constant route in every run | lowest ${worst.toFixed(3)} (median ${median(ratios).toFixed(3)}, ${rounds.length} runs${bad ? `, ${bad} failed requests` : ''})${loaded ? ', loaded' : ''} | ≥ ${TARGET} in each run | ${verdict} |`,
    '',
    `CPU ceiling: a report took ${Math.round(median(rounds.map((x) => cpuOf(x.ingest))))} µs of CPU (server, client and PostgreSQL, median), a constant request ${Math.round(median(rounds.map((x) => cpuOf(x.base))))} µs: with every side CPU-bound on the same cores the ratio cannot exceed ${cpuCeiling.toFixed(3)}.`,
    '',
    `Command: \`npx tsx bench/pg-ingest.ts --rounds ${rounds.length} --duration ${DURATION} --connections ${CONNECTIONS} --n ${N}\``,
    '',
  ].join('\n');
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(join(here, 'results', 'pg-ingest.md'), md);
  console.log(md);
}

await main();
