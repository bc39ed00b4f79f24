/*
 * The /ips feed walked from the start, as an agent's first sync does (issue 35: every side in a
 * process of its own).
 *
 * Data: bench/gen-ipv4.ts (seeded; N indicators, default 1,000,000, reported by 200 organizations)
 * in a private PostgreSQL cluster (bench/_pg-cluster.ts). The control plane (bench/_ipv4-serve.mjs:
 * the server bundle on plain Node, as `npm start`; auth, coins and rate limiting on) is pinned to
 * the server core; the walker (bench/_feed-walk.mjs: GET /api/v1/ips from ts=0, page_size=1000,
 * following next_ts) is a plain Node process pinned to the client core. The baseline: nginx (Debian,
 * one worker, sendfile on; bench/_nginx.ts) pinned to the server core, serving the pages of a first
 * walk as files, walked the same way by the same walker. --rounds rounds alternate nginx and the
 * server; the median round is reported with the CPU time of the server, nginx, the walker and
 * PostgreSQL, the server's RSS, and the load average when each walk began.
 *
 * The rows this file held before (look-ups, POST /ips, /flat and /ipv4 against a constant route
 * and static files served by the bench's own process, read by an in-process client) are restated
 * with separate-process baselines in bench/lookups.ts, bench/pg-ingest.ts and bench/lists.ts.
 *
 *   npx tsx bench/ipv4.ts [--n 1000000] [--walk-seconds 60] [--rounds 3] [--fresh]
 * BENCH_CPU_PROF=<dir> profiles the server (bench/_ipv4-child.ts). Writes bench/results/ipv4.md.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { announced, startIpv4Server } from './_ipv4-child.ts';
import { args, flag } from './_args.ts';
import { CLIENT_CPUS, PINNED, SERVER_CPUS, TICK, processTicks, spawnNodePinned } from './_pinned.ts';
import { startPgCluster } from './_pg-cluster.ts';
import { buildServerBundle } from './_server-bundle.ts';
import { startNginx, type Nginx } from './_nginx.ts';
import { BENCH_ORGS, benchDbUrl, generateIpv4 } from './gen-ipv4.ts';

const here = dirname(fileURLToPath(import.meta.url));
const N = flag('n', 1_000_000);
const WALK_SECONDS = flag('walk-seconds', 60);
const ROUNDS = flag('rounds', 3);

interface Walk {
  records: number;
  pages: number;
  seconds: number;
  complete: boolean;
  /** CPU seconds of the walker process. */
  cpuSeconds: number;
}

interface Side {
  walk: Walk;
  /** CPU seconds of the serving process (the control plane or nginx). */
  serverCpu: number;
  pgCpu: number;
  load: number;
}

interface Round {
  nginx: Side;
  server: Side;
  /** Server RSS after its walk. */
  rssMb: number;
}

/** VmRSS or VmHWM of a process, in MB. */
function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

async function walkOnce(url: string, authorization: string, o: { save?: string; static?: boolean } = {}): Promise<Walk> {
  const env = { ...process.env, BENCH_WALK: JSON.stringify({ url, authorization, seconds: WALK_SECONDS, ...o }) };
  const child = spawnNodePinned(join(here, '_feed-walk.mjs'), { cpus: CLIENT_CPUS, env });
  return announced<Walk>(child, 'feed walker');
}

const median = <T>(xs: T[], by: (x: T) => number): T => [...xs].sort((a, b) => by(a) - by(b))[Math.floor(xs.length / 2)]!;
const perK = (seconds: number, records: number) => ((1e6 * seconds) / records).toFixed(1);

async function main(): Promise<void> {
  const cluster = await startPgCluster();
  await generateIpv4(cluster.url, N, args.includes('--fresh'));
  buildServerBundle();
  const { child, ready, stop } = await startIpv4Server({ url: benchDbUrl(cluster.url, N).url, orgGids: ['RMP-GID-BENCH1'], free: false, cpus: SERVER_CPUS });
  const pid = child.pid!;
  const appUrl = `http://127.0.0.1:${ready.app}`;
  const authorization = ready.readers[0]!;
  let nginx: Nginx | undefined;
  try {
    const rssStart = statusMb(pid, 'VmRSS');
    nginx = await startNginx(SERVER_CPUS);
    // The first walk saves every page for nginx (and warms the server like any other walk).
    const first = await walkOnce(appUrl, authorization, { save: nginx.root });
    console.log(`first walk (pages saved for nginx): ${first.records.toLocaleString('en')} records in ${first.seconds.toFixed(1)} s`);
    const ng = nginx;
    const side = async (which: 'nginx' | 'server'): Promise<Side> => {
      const load = loadavg()[0]!;
      const s0 = which === 'nginx' ? ng.cpuTicks() : processTicks(pid);
      const p0 = cluster.cpuTicks();
      const walk = which === 'nginx' ? await walkOnce(ng.url, authorization, { static: true }) : await walkOnce(appUrl, authorization);
      return { walk, serverCpu: ((which === 'nginx' ? ng.cpuTicks() : processTicks(pid)) - s0) / TICK, pgCpu: (cluster.cpuTicks() - p0) / TICK, load };
    };
    const rounds: Round[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // The order alternates, so that neither side always walks on a warmer or quieter machine.
      const a = await side(r % 2 === 0 ? 'nginx' : 'server');
      const b = await side(r % 2 === 0 ? 'server' : 'nginx');
      const round = r % 2 === 0 ? { nginx: a, server: b, rssMb: statusMb(pid, 'VmRSS') } : { nginx: b, server: a, rssMb: statusMb(pid, 'VmRSS') };
      rounds.push(round);
      console.log(`round ${r + 1}: nginx ${round.nginx.walk.seconds.toFixed(2)} s, server ${round.server.walk.seconds.toFixed(2)} s, ratio ${ratio(round).toFixed(2)}; load ${round.nginx.load.toFixed(2)}/${round.server.load.toFixed(2)}`);
    }
    writeResults(rounds, cluster.describe(), rssStart, statusMb(pid, 'VmHWM'));
  } finally {
    await nginx?.stop();
    await stop();
    await cluster.stop();
  }
}

/** Server walk time over nginx's. */
const ratio = (r: Round) => r.server.walk.seconds / r.nginx.walk.seconds;

function writeResults(rounds: Round[], clusterText: string, rssStart: number, peakMb: number): void {
  const mid = median(rounds, ratio);
  const rate = (w: Walk) => Math.round(w.records / w.seconds).toLocaleString('en');
  const cpuCell = (x: Side) => `${perK(x.serverCpu, x.walk.records)} / ${perK(x.walk.cpuSeconds, x.walk.records)}`;
  const loaded = (l: number) => `${l.toFixed(2)}${l > 2 ? ' (above 2: loaded)' : ''}`;
  const md = [
    '# The /ips feed walked from the start, against nginx (bench/ipv4.ts)',
    '',
    `Run ${new Date().toISOString()}, Node ${process.version}, ${N.toLocaleString('en')} generated IPv4 indicators (bench/gen-ipv4.ts, ${BENCH_ORGS} organizations) in PostgreSQL; ${clusterText}.`,
    `Every side a process of its own: the control plane (server bundle on plain Node; auth, coins and rate limiting on) and nginx (one worker, sendfile on, serving the pages of a first walk as files) ${PINNED ? 'pinned to core 0' : '(not pinned: one core)'},`,
    `the walker (plain Node: GET /api/v1/ips from ts=0, page_size=1000, following next_ts, one request at a time as an agent's first sync; over nginx the same walk from file to file) ${PINNED ? 'pinned to core 1' : ''}; PostgreSQL not pinned.`,
    `${ROUNDS} rounds alternating nginx and the server, each walk capped at ${WALK_SECONDS} s; the median round's ratio. The machine (${cpus().length} cores) is shared with other work: the load average (1 min) when each walk began is given, and walks above 2 are marked.`,
    '',
    '| round | records | pages | nginx s | server s | indicators/s: nginx / server | ratio (server s ÷ nginx s) | CPU µs per indicator, nginx: serving / walker | server: serving / walker / PostgreSQL | server RSS after MB | load average: nginx / server |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rounds.map(
      (x, k) =>
        `| ${k + 1}${x === mid ? ' (median)' : ''} | ${x.server.walk.records.toLocaleString('en')}${x.server.walk.complete ? '' : ' (time cap)'} | ${x.server.walk.pages} | ${x.nginx.walk.seconds.toFixed(2)} | ${x.server.walk.seconds.toFixed(2)} | ${rate(x.nginx.walk)} / ${rate(x.server.walk)} | ${ratio(x).toFixed(2)}× | ${cpuCell(x.nginx)} | ${cpuCell(x.server)} / ${perK(x.server.pgCpu, x.server.walk.records)} | ${x.rssMb.toFixed(0)} | ${loaded(x.nginx.load)} / ${loaded(x.server.load)} |`,
    ),
    '',
    `Median round: the server walks ${rate(mid.server.walk)} indicators/s, ${ratio(mid).toFixed(2)}× nginx's time over the same bytes (rounds ${rounds.map((x) => ratio(x).toFixed(2)).join(', ')}).`,
    `Server RSS ${rssStart.toFixed(0)} MB before the first walk, peak (VmHWM) ${peakMb.toFixed(0)} MB over the run.`,
    'No target of issue 35 names the walk; it is the work of an agent\'s first sync. Look-ups, ingestion and the lists, each against a',
    'baseline in its own process, are in lookups.md, pg-ingest.md and lists.md.',
    '',
    `Command: \`npx tsx bench/ipv4.ts --n ${N} --walk-seconds ${WALK_SECONDS} --rounds ${ROUNDS}\``,
    '',
  ].join('\n');
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(join(here, 'results', 'ipv4.md'), md);
  console.log(md);
}

await main();
