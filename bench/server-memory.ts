/*
 * The server's resident memory in service (issue 35 item 3): production start
 * (`node apps/server/dist/main.mjs`, the bundle this bench builds), the demo organization's admin
 * key, then one look-up (GET /ips/{ip} and GET /info/{ip}: the enrichment tables' first use) and
 * 10,000 reports of distinct public addresses (16 at a time, from this process: the client is not
 * the server), on PGlite (a new DATA_DIR) and on PostgreSQL (a new database). RSS of the server
 * process after start, after the look-up and after the reports (the kernel's VmRSS, with its
 * anonymous and file-backed parts), and the load average when each subject started.
 *
 *   npx tsx bench/server-memory.ts [--reports 10000] [--label after] [--node-defaults]
 * The server runs with production's Node flags and malloc settings (apps/server/runtime.json);
 * --node-defaults leaves them out.
 *   DATABASE_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/postgres).
 * Appends its rows to bench/results/server-memory.md (one table per --label).
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { args, flag } from './_args.ts';
import { SERVER_RUNTIME } from './_server-bundle.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const REPORTS = flag('reports', 10_000);
const LABEL = args.includes('--label') ? args[args.indexOf('--label') + 1]! : 'run';
/** --node-defaults: the bundle without production's Node flags and malloc settings (apps/server/runtime.json), for a before/after. */
const RUNTIME = args.includes('--node-defaults') ? { nodeArgs: [], env: {} } : SERVER_RUNTIME;
const PG_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const OUT = join(here, 'results', 'server-memory.md');

interface Figures {
  subject: string;
  load: number;
  started: Record<string, number>;
  lookedUp: Record<string, number>;
  reported: Record<string, number>;
  accepted: number;
  seconds: number;
}

/** VmRSS, RssAnon and RssFile of a process in MB. */
function rss(pid: number): Record<string, number> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/** A public address for report k: spread over 1.0.0.0–223.255.255.255, skipping 10/8, 127/8 and 100/8. */
function address(k: number): string {
  const n = Math.imul(k + 1, 2_654_435_761) >>> 0;
  let a = 1 + ((n >>> 24) % 222);
  if (a === 10 || a === 127 || a === 100 || a === 172 || a === 192 || a === 169) a = 11;
  return `${a}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${1 + (n & 127)}`;
}

async function measure(subject: string, env: Record<string, string>): Promise<Figures> {
  const load = loadavg()[0]!;
  const child = spawn(process.execPath, [...RUNTIME.nodeArgs, join(root, 'apps', 'server', 'dist', 'main.mjs')], {
    env: { ...process.env, ...RUNTIME.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '100000000', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { url, key } = await new Promise<{ url: string; key: string }>((resolve, reject) => {
    let out = '';
    let base = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      base ||= /"url":"([^"]+)"/.exec(out)?.[1] ?? '';
      const key = /API key \(shown only now, keep it\):\n\s+(\S+)/.exec(out)?.[1];
      if (base && key) resolve({ url: base, key });
    });
    child.once('exit', (code) => reject(new Error(`${subject}: server exited with ${code}\n${out}`)));
  });
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const pid = child.pid!;
    const started = rss(pid);
    const headers = { authorization: key, 'content-type': 'application/json' };
    for (const path of ['/ips/8.8.8.8', '/info/8.8.8.8']) {
      const res = await fetch(`${url}${path}`, { headers });
      await res.arrayBuffer();
      if (res.status >= 500) throw new Error(`${path}: ${res.status}`);
    }
    await new Promise((r) => setTimeout(r, 500));
    const lookedUp = rss(pid);
    const t0 = performance.now();
    let next = 0;
    let accepted = 0;
    const worker = async () => {
      for (let k = next++; k < REPORTS; k = next++) {
        const res = await fetch(`${url}/ips`, { method: 'POST', headers, body: JSON.stringify({ ip: address(k), confidence: 0.8, source: 'bench' }) });
        await res.arrayBuffer();
        if (res.status < 300) accepted++;
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const seconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 2000));
    const reported = rss(pid);
    return { subject, load, started, lookedUp, reported, accepted, seconds };
  } finally {
    await new Promise((resolve) => {
      if (child.exitCode !== null) resolve(null);
      else child.once('exit', resolve).kill('SIGTERM');
    });
  }
}

async function main(): Promise<void> {
  if (!args.includes('--no-build')) spawnSync(process.execPath, [join(root, 'apps', 'server', 'scripts', 'build.mjs')], { stdio: 'inherit' });
  const rows: Figures[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), 'rampart-bench-memory-'));
  try {
    rows.push(await measure('PGlite (new DATA_DIR)', { DATA_DIR: dataDir }));
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  const name = `rampart_bench_memory_${process.pid}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  try {
    const u = new URL(PG_URL);
    u.pathname = `/${name}`;
    rows.push(await measure('PostgreSQL (new database)', { DATABASE_URL: u.toString() }));
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
  const f = (r: Record<string, number>) => `${r.rss!.toFixed(0)} (anon ${r.anon!.toFixed(0)}, file ${r.file!.toFixed(0)})`;
  const md = [
    `## ${LABEL}: ${new Date().toISOString()}, Node ${process.version}, commit ${spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout.trim()}`,
    '',
    RUNTIME === SERVER_RUNTIME
      ? `The server as production runs it: \`${Object.entries(RUNTIME.env).map(([k, v]) => `${k}=${v}`).join(' ')} node ${RUNTIME.nodeArgs.join(' ')} apps/server/dist/main.mjs\` (apps/server/runtime.json).`
      : 'The server with Node\'s defaults (--node-defaults: no flags, glibc malloc defaults): `node apps/server/dist/main.mjs`.',
    '',
    '| store | load average (1 min) at start | RSS MB after start | after one look-up (/ips, /info) | after the reports | reports accepted (s) |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.subject} | ${r.load.toFixed(2)}${r.load > 2 ? ' (above 2: loaded)' : ''} | ${f(r.started)} | ${f(r.lookedUp)} | ${f(r.reported)} | ${r.accepted.toLocaleString('en')} of ${REPORTS.toLocaleString('en')} (${r.seconds.toFixed(1)} s) |`),
    '',
    ...rows.map((r, k) => {
      const limit = k === 0 ? 180 : 120;
      return `- ${r.subject} RSS after one look-up and ${REPORTS.toLocaleString('en')} reports: ${r.reported.rss!.toFixed(0)} MB (target ≤ ${limit} MB: ${r.reported.rss! <= limit ? 'met' : 'missed'})`;
    }),
    '',
  ].join('\n');
  if (!existsSync(OUT)) {
    writeFileSync(
      OUT,
      [
        '# Server memory in service (bench/server-memory.ts)',
        '',
        '`node apps/server/dist/main.mjs` (production start, demo organization), then GET /ips/8.8.8.8 and GET /info/8.8.8.8,',
        `then ${REPORTS.toLocaleString('en')} POST /ips of distinct public addresses, 16 at a time from the bench process. RSS of the server process`,
        '(VmRSS; anon: heap, WebAssembly and native memory; file: mapped code and files). Targets (issue 35): PGlite ≤ 180 MB, PostgreSQL ≤ 120 MB.',
        '',
      ].join('\n'),
    );
  }
  appendFileSync(OUT, `${md}\n`);
  console.log(md);
}

await main();
