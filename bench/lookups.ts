/*
 * GET /ips/{ip} against a no-work server in a process of its own (issue 35, items 1 and 6).
 *
 * Data: bench/gen-ipv4.ts (N indicators, default 1,000,000) in a private PostgreSQL cluster
 * (bench/_pg-cluster.ts). Every side is a process of its own:
 *   - the control plane (bench/_ipv4-serve.mjs: the server bundle on plain Node, auth, coins and
 *     rate limiting on, look-ups from the in-process mirror), pinned with taskset to core 0;
 *   - the ceiling (bench/_nowork-server.mjs): a fastify server that answers every request with a
 *     look-up's recorded answer (status, headers, body) and does no work, pinned to core 0 too;
 *   - the load client, Debian's wrk with a Lua script rotating over LOOKUP_PATHS held addresses
 *     and KEYS organizations' reader keys, pinned to core 1.
 * The rows alternate over --rounds rounds (the ceiling first in odd rounds). Each round gives the
 * req/s ratio, the CPU time per request of each serving process and of the client, and the load
 * average when it started; rows started above load 2 are marked. The CPU per look-up is printed
 * for every round so that a change from round to round (issue 35 item 6: it doubled after the
 * first round in one measurement) shows.
 *
 *   npx tsx bench/lookups.ts [--n 1000000] [--duration 5] [--rounds 5] [--connections 32]
 * BENCH_CPU_PROF=<dir> profiles the control plane (bench/_ipv4-child.ts).
 * Writes bench/results/lookups.md.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { args, flag } from './_args.ts';
import { startIpv4Server } from './_ipv4-child.ts';
import { CLIENT, runClient } from './_load-client.ts';
import { luaString, measureSide, startNoWork } from './_nowork.ts';
import { CLIENT_CPUS, PINNED, SERVER_CPUS, rps, type Side } from './_pinned.ts';
import { startPgCluster } from './_pg-cluster.ts';
import { buildServerBundle } from './_server-bundle.ts';
import { BENCH_ORGS, benchDbUrl, benchIp, generateIpv4 } from './gen-ipv4.ts';

const here = dirname(fileURLToPath(import.meta.url));
const N = flag('n', 1_000_000);
const DURATION = flag('duration', 5);
const ROUNDS = flag('rounds', 5);
const CONNECTIONS = flag('connections', 32);
const LOOKUP_PATHS = 5000;
const KEYS = 32;
const TARGET = 0.6;

const usPerRequest = (cpuSeconds: number, s: Side) => (1e6 * cpuSeconds) / Math.max(1, s.run.requests);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** A latency wrk printed in a unit the parser did not read shows as a dash, not NaN. */
const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '—');

async function main(): Promise<void> {
  const cluster = await startPgCluster();
  await generateIpv4(cluster.url, N, args.includes('--fresh'));
  buildServerBundle();
  const work = mkdtempSync(join(tmpdir(), 'rampart-bench-lookups-'));
  const url = benchDbUrl(cluster.url, N).url;
  const orgGids = Array.from({ length: KEYS }, (_, o) => `RMP-GID-BENCH${(o * 6) % BENCH_ORGS}`);
  const server = await startIpv4Server({ url, orgGids, free: false, cpus: SERVER_CPUS });
  const appBase = `http://127.0.0.1:${server.ready.app}`;
  // Held addresses spread over the data set, and the organizations' reader keys, rotated by wrk.
  const paths = Array.from({ length: LOOKUP_PATHS }, (_, k) => `/api/v1/ips/${benchIp(1 + Math.floor((((k * 2_654_435_761) % 4_294_967_296) / 4_294_967_296) * N))}`);
  const script = join(work, 'rotate.lua');
  writeFileSync(
    script,
    [
      `local paths = { ${paths.map(luaString).join(', ')} }`,
      `local keys = { ${server.ready.readers.map(luaString).join(', ')} }`,
      'local i = 0',
      'request = function()',
      '  i = i + 1',
      '  return wrk.format("GET", paths[(i % #paths) + 1], { ["Authorization"] = keys[(i % #keys) + 1] })',
      'end',
      '',
    ].join('\n'),
  );
  // The ceiling answers with a look-up's own bytes.
  const ceiling = await startNoWork(await fetch(`${appBase}${paths[0]}`, { headers: { authorization: server.ready.readers[0]! } }), work);
  const rounds: Array<{ lookup: Side; ceiling: Side }> = [];
  try {
    const side = (which: 'lookup' | 'ceiling'): Side =>
      measureSide(which === 'lookup' ? server.child.pid! : ceiling.pid, `${which === 'lookup' ? appBase : ceiling.url}/`, { connections: CONNECTIONS, duration: DURATION, script }, cluster.cpuTicks);
    // Warm both (JIT, connections, the mirror's first catch-ups); not counted.
    runClient(`${appBase}/`, { connections: CONNECTIONS, duration: 2, cpus: CLIENT_CPUS, script });
    runClient(`${ceiling.url}/`, { connections: CONNECTIONS, duration: 2, cpus: CLIENT_CPUS, script });
    for (let r = 0; r < ROUNDS; r++) {
      const first = r % 2 === 0 ? side('ceiling') : side('lookup');
      const second = r % 2 === 0 ? side('lookup') : side('ceiling');
      const round = r % 2 === 0 ? { ceiling: first, lookup: second } : { lookup: first, ceiling: second };
      rounds.push(round);
      console.log(
        `round ${r + 1}: look-up ${rps(round.lookup).toFixed(0)} req/s (${round.lookup.run.bad} bad, ${usPerRequest(round.lookup.cpu, round.lookup).toFixed(0)} µs CPU each), ceiling ${rps(round.ceiling).toFixed(0)} req/s (${usPerRequest(round.ceiling.cpu, round.ceiling).toFixed(0)} µs), ratio ${(rps(round.lookup) / rps(round.ceiling)).toFixed(3)}; load ${round.ceiling.load.toFixed(2)}/${round.lookup.load.toFixed(2)}`,
      );
    }
  } finally {
    await ceiling.stop();
    await server.stop();
    rmSync(work, { recursive: true, force: true });
    await cluster.stop();
  }
  writeResults(rounds, cluster.describe());
}

function writeResults(rounds: Array<{ lookup: Side; ceiling: Side }>, clusterText: string): void {
  const ratios = rounds.map((x) => rps(x.lookup) / rps(x.ceiling));
  const mid = median(ratios);
  const lookupCpu = rounds.map((x) => usPerRequest(x.lookup.cpu, x.lookup));
  const bad = rounds.reduce((a, x) => a + x.lookup.run.bad, 0);
  const loaded = rounds.some((x) => Math.max(x.lookup.load, x.ceiling.load) > 2);
  const cpuSpread = Math.max(...lookupCpu) / Math.min(...lookupCpu);
  const md = [
    '# Look-ups against a no-work server in its own process (bench/lookups.ts)',
    '',
    `Run ${new Date().toISOString()}, Node ${process.version}, ${N.toLocaleString('en')} generated IPv4 indicators (bench/gen-ipv4.ts, ${BENCH_ORGS} organizations) in PostgreSQL; ${clusterText}.`,
    `Every side a process of its own: the control plane (server bundle on plain Node; auth, coins and rate limiting on; look-ups from its mirror) and the ceiling`,
    `(a fastify server answering every request with a look-up's recorded status, headers and body, doing no work) ${PINNED ? 'pinned to core 0' : '(not pinned: one core)'};`,
    `the load client (${CLIENT === 'wrk' ? "Debian's wrk, one thread, a Lua script rotating over " + LOOKUP_PATHS.toLocaleString('en') + ' held addresses and ' + KEYS + " organizations' reader keys" : CLIENT}) ${PINNED ? 'pinned to core 1' : ''}; PostgreSQL not pinned.`,
    `${CONNECTIONS} connections, ${DURATION} s per run, ${ROUNDS} rounds alternating (the ceiling first in odd rounds). The load average (1 min) when each run started is given; rows above 2 are marked.`,
    '',
    '| round | ceiling req/s | GET /ips/{ip} req/s | look-up / ceiling | server CPU µs/request: ceiling / look-up | client CPU µs/request: ceiling / look-up | PostgreSQL CPU s (look-up run) | p99 ms: ceiling / look-up | non-2xx + errors | load average: ceiling / look-up |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rounds.map((x, k) => {
      const l = Math.max(x.lookup.load, x.ceiling.load);
      return `| ${k + 1} | ${Math.round(rps(x.ceiling)).toLocaleString('en')} | ${Math.round(rps(x.lookup)).toLocaleString('en')} | ${ratios[k]!.toFixed(3)} | ${usPerRequest(x.ceiling.cpu, x.ceiling).toFixed(0)} / ${lookupCpu[k]!.toFixed(0)} | ${usPerRequest(x.ceiling.run.cpuSeconds, x.ceiling).toFixed(0)} / ${usPerRequest(x.lookup.run.cpuSeconds, x.lookup).toFixed(0)} | ${x.lookup.pg.toFixed(2)} | ${ms(x.ceiling.run.p99)} / ${ms(x.lookup.run.p99)} | ${x.lookup.run.bad} | ${x.ceiling.load.toFixed(2)} / ${x.lookup.load.toFixed(2)}${l > 2 ? ' (above 2: loaded)' : ''} |`;
    }),
    '',
    '| target (issue 35) | measured | limit | verdict |',
    '|---|---|---|---|',
    `| GET /ips/{ip} ≥ 0.6 of the separate-process ceiling | median ${mid.toFixed(3)} (${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}, ${ROUNDS} rounds)${loaded ? ', loaded' : ''} | ≥ ${TARGET} | ${bad > 0 ? `missed (${bad} non-2xx or errors)` : mid >= TARGET ? 'met' : 'missed'} |`,
    `| CPU per look-up steady from round to round | ${lookupCpu.map((c) => c.toFixed(0)).join(', ')} µs (largest ÷ smallest ${cpuSpread.toFixed(2)}) | ≤ 1.3 | ${cpuSpread <= 1.3 ? 'met' : 'missed'} |`,
    '',
    `Command: \`npx tsx bench/lookups.ts --n ${N} --duration ${DURATION} --rounds ${ROUNDS} --connections ${CONNECTIONS}\``,
    '',
  ].join('\n');
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(join(here, 'results', 'lookups.md'), md);
  console.log(md);
}

await main();
