/*
 * /flat and /ipv4 against nginx serving the same bytes (issue 35, items 1 and 2).
 *
 * Data: bench/gen-ipv4.ts (N indicators, default 1,000,000) in a private PostgreSQL cluster
 * (bench/_pg-cluster.ts). Every side is a process of its own:
 *   - the control plane (bench/_ipv4-serve.mjs: the server bundle on plain Node, auth and coins on,
 *     lists from the in-process mirror), pinned with taskset to the server core;
 *   - nginx (Debian, one worker, sendfile on; bench/_nginx.ts) pinned to the same core, serving the
 *     bytes the server answered, written to files;
 *   - the load client (wrk when installed, else autocannon's CLI; bench/_load-client.ts) pinned to
 *     the other core.
 * PostgreSQL is not pinned (the server asks it two short queries per list request: the catch-up
 * and the policy). The server runs twice: with the list-body cache off (LIST_CACHE_MB=0, what every
 * request cost before it) and on (the default budget, or --cache-mb). Each row alternates nginx
 * and the server over --rounds rounds; the median round is reported, with the CPU time of each
 * process beside the wall time and the load average when the row started (rows started above
 * load 2 are marked: the machine is shared).
 *
 *   npx tsx bench/lists.ts [--n 1000000] [--duration 10] [--rounds 3] [--cache-mb 96] [--after-only]
 * BENCH_CPU_PROF=<dir> profiles the server (bench/_ipv4-child.ts).
 * Writes bench/results/lists.md.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { args, flag } from './_args.ts';
import { startIpv4Server } from './_ipv4-child.ts';
import { CLIENT, runClient } from './_load-client.ts';
import { CLIENT_CPUS, PINNED, SERVER_CPUS, TICK, processTicks, rps, type Side } from './_pinned.ts';
import { serveFile, startNginx } from './_nginx.ts';
import { startPgCluster } from './_pg-cluster.ts';
import { buildServerBundle } from './_server-bundle.ts';
import { BENCH_ORGS, benchDbUrl, generateIpv4 } from './gen-ipv4.ts';

const here = dirname(fileURLToPath(import.meta.url));
const N = flag('n', 1_000_000);
const DURATION = flag('duration', 10);
const ROUNDS = flag('rounds', 3);
const CACHE_MB = flag('cache-mb', 96);
/** --after-only: only the server with its cache on (no "before" rows). */
const VARIANTS = args.includes('--after-only') ? [CACHE_MB] : [0, CACHE_MB];
const TARGET = 2;

interface Target {
  label: string;
  path: string;
  file: string;
  connections: number;
}

const TARGETS: Target[] = [
  { label: '/flat/2 (CSV, whole list in one response)', path: '/api/v1/flat/2', file: 'flat.csv', connections: 4 },
  { label: '/flat/2?list=YES (comma list, one response)', path: '/api/v1/flat/2?list=YES', file: 'flat-list.txt', connections: 4 },
  { label: '/ipv4/1 (first page, 10,000 lines)', path: '/api/v1/ipv4/1', file: 'ipv4-1.txt', connections: 16 },
];

interface Row {
  target: Target;
  cacheMb: number;
  bytes: number;
  nginx: Side;
  server: Side;
  /** nginx req/s over the server's, per round. */
  ratios: number[];
}


/**
 * The body of one GET; retried twice, as a keep-alive connection idle through a long run may be
 * closed by the server just as it is reused ("other side closed").
 */
async function fetchBody(url: string, headers: Record<string, string>): Promise<Uint8Array> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(url, { headers });
      if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
      return new Uint8Array(await res.arrayBuffer());
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const cluster = await startPgCluster();
  await generateIpv4(cluster.url, N, args.includes('--fresh'));
  buildServerBundle();
  const nginx = await startNginx(SERVER_CPUS);
  const rows: Row[] = [];
  /** Server peak RSS (VmHWM, MB) over each variant's run. */
  const peaks = new Map<number, number>();
  const url = benchDbUrl(cluster.url, N).url;
  try {
    for (const cacheMb of VARIANTS) {
      const { child, ready, stop } = await startIpv4Server({ url, orgGids: ['RMP-GID-BENCH0'], free: false, listCacheMb: cacheMb, listStreamsPerKey: 256, cpus: SERVER_CPUS });
      const pid = child.pid!;
      const headers = { authorization: ready.readers[0]! };
      try {
        for (const target of TARGETS) {
          const appUrl = `http://127.0.0.1:${ready.app}${target.path}`;
          // The server's answer, as nginx will serve it (the CSV's live scores are those of one second).
          const bytes = await fetchBody(appUrl, headers);
          serveFile(nginx, target.file, bytes);
          const side = (which: 'nginx' | 'server'): Side => {
            const load = loadavg()[0]!;
            const cpu0 = which === 'nginx' ? nginx.cpuTicks() : processTicks(pid);
            const pg0 = cluster.cpuTicks();
            const run =
              which === 'nginx'
                ? runClient(`${nginx.url}/${target.file}`, { connections: target.connections, duration: DURATION, cpus: CLIENT_CPUS })
                : runClient(appUrl, { connections: target.connections, duration: DURATION, headers, cpus: CLIENT_CPUS });
            const cpu = ((which === 'nginx' ? nginx.cpuTicks() : processTicks(pid)) - cpu0) / TICK;
            return { run, cpu, pg: (cluster.cpuTicks() - pg0) / TICK, load };
          };
          const rounds: Array<{ nginx: Side; server: Side }> = [];
          for (let r = 0; r < ROUNDS; r++) {
            // The order alternates, so that neither side always runs on a warmer or quieter machine.
            const first = r % 2 === 0 ? side('nginx') : side('server');
            const second = r % 2 === 0 ? side('server') : side('nginx');
            const round = r % 2 === 0 ? { nginx: first, server: second } : { nginx: second, server: first };
            rounds.push(round);
            console.log(
              `${target.label}, cache ${cacheMb} MB, round ${r + 1}: nginx ${rps(round.nginx).toFixed(1)} req/s, server ${rps(round.server).toFixed(1)} req/s (${round.server.run.bad} bad), ratio ${(rps(round.nginx) / rps(round.server)).toFixed(2)}; load ${round.nginx.load.toFixed(2)}/${round.server.load.toFixed(2)}`,
            );
          }
          const ratios = rounds.map((x) => rps(x.nginx) / rps(x.server));
          const mid = rounds.find((x) => rps(x.nginx) / rps(x.server) === median(ratios))!;
          rows.push({ target, cacheMb, bytes: bytes.byteLength, nginx: mid.nginx, server: mid.server, ratios });
        }
        peaks.set(cacheMb, peakRssMb(pid));
      } finally {
        await stop();
      }
    }
    writeResults(rows, peaks, cluster.describe(), CLIENT);
  } finally {
    await nginx.stop();
    await cluster.stop();
  }
}

/** VmHWM of a process in MB: its largest resident set so far. */
function peakRssMb(pid: number): number {
  const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

function writeResults(rows: Row[], peaks: Map<number, number>, clusterText: string, client: string): void {
  const mb = (b: number) => (b / 1e6).toFixed(b >= 1e7 ? 0 : 2);
  const perReq = (s: Side) => ((1000 * s.cpu) / s.run.requests).toFixed(2);
  const cell = (s: Side) => `${rps(s).toFixed(1)} req/s, ${mb(s.run.bytes / s.run.seconds)} MB/s, p99 ${s.run.p99} ms`;
  const loadCell = (r: Row) => {
    const l = Math.max(r.nginx.load, r.server.load);
    return `${r.nginx.load.toFixed(2)} / ${r.server.load.toFixed(2)}${l > 2 ? ' (above 2: loaded)' : ''}`;
  };
  const md = [
    '# /flat and /ipv4 against nginx (bench/lists.ts)',
    '',
    `Run ${new Date().toISOString()}, Node ${process.version}, ${N.toLocaleString('en')} generated IPv4 indicators (bench/gen-ipv4.ts, ${BENCH_ORGS} organizations) in PostgreSQL; ${clusterText}.`,
    `Every side a process of its own: the control plane (server bundle on plain Node, auth and coins on, lists from the mirror) and nginx ${PINNED ? 'pinned to core 0' : '(not pinned: one core)'},`,
    `the load client (${client === 'wrk' ? "Debian's wrk" : "autocannon's CLI on plain Node (wrk is not installed)"}) ${PINNED ? 'pinned to core 1' : ''}; PostgreSQL not pinned. nginx: one worker, sendfile on, serving the bytes the server answered (written to a file before the row).`,
    `${DURATION} s per run, ${ROUNDS} rounds per row alternating nginx and the server; the median round's figures. The machine (${cpus().length} cores) is shared with other work: the load average (1 min) when each side started is given, and rows above 2 are marked.`,
    '',
    '| list | body | LIST_CACHE_MB | nginx | server | server CPU ms/request (wall s: CPU s) | nginx CPU ms/request | PostgreSQL CPU s | client CPU s: nginx / server | load average: nginx / server | ratio (nginx req/s ÷ server req/s), rounds | ≤ 2× nginx |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => {
      const ratio = rps(r.nginx) / rps(r.server);
      const verdict = r.server.run.bad > 0 ? `missed (${r.server.run.bad} non-2xx or errors)` : ratio <= TARGET ? 'met' : 'missed';
      return `| ${r.target.label} | ${mb(r.bytes)} MB | ${r.cacheMb === 0 ? '0 (off: before)' : r.cacheMb} | ${cell(r.nginx)} | ${cell(r.server)} | ${perReq(r.server)} (${r.server.run.seconds.toFixed(1)}: ${r.server.cpu.toFixed(2)}) | ${perReq(r.nginx)} | ${r.server.pg.toFixed(2)} | ${r.nginx.run.cpuSeconds.toFixed(2)} / ${r.server.run.cpuSeconds.toFixed(2)} | ${loadCell(r)} | ${ratio.toFixed(2)}× (${r.ratios.map((x) => x.toFixed(2)).join(', ')}) | ${r.cacheMb === 0 ? `— (before: cache off; would be ${verdict.split(' ')[0]})` : verdict} |`;
    }),
    '',
    'The ratio is the time per request relative to nginx (nginx req/s over the server\'s, same client, same connections). A client that',
    'saturates its own core bounds both sides alike: the CPU columns say which process did the work (nginx with sendfile copies nothing',
    'in user space; the server writes each body to the socket from memory once it is rendered).',
    '',
    ...[...peaks].map(([cacheMb, mb]) => `- Server peak RSS (VmHWM) over the rows with LIST_CACHE_MB=${cacheMb}: ${mb.toFixed(0)} MB (target < 300 MB, issue 22: ${mb < 300 ? 'met' : 'missed'}).`),
    '',
    `Command: \`npx tsx bench/lists.ts --n ${N} --duration ${DURATION} --rounds ${ROUNDS} --cache-mb ${CACHE_MB}\``,
    '',
  ].join('\n');
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(join(here, 'results', 'lists.md'), md);
  console.log(md);
}

await main();
