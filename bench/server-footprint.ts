/*
 * The control plane's start-up time and idle memory, as a user gets them from `npm start`,
 * against a bare fastify app (bench/_bare-fastify.mjs, plain Node) measured in the same rounds.
 *
 * Each round runs, one after the other (so a loaded machine's drift hits every subject alike):
 *   bare fastify                   `node bench/_bare-fastify.mjs`
 *   PGlite, first start            `npm start` on a new DATA_DIR (initdb, migrations, demo organization)
 *   PGlite, restart                `npm start` again on that DATA_DIR
 *   PostgreSQL, new database       `npm start` with DATABASE_URL naming an empty database
 *   PostgreSQL, restart            `npm start` again on it
 *   the same three starts of an existing or new store as production runs them, without npm:
 *   `node apps/server/dist/main.mjs` (the bundle this bench builds first), on a data directory
 *   and a database of their own
 * and for each: seconds from spawn to the first 200 of GET /api/v1/version ("ready"), then the
 * resident memory (RSS) of the whole process tree (npm, its shell, the server, any child such as
 * esbuild) after --idle seconds, and again after the console's files were served once. The
 * server's own process is also shown alone (what a service manager running
 * `node apps/server/dist/main.mjs` keeps resident).
 *
 * Then a breakdown of the server's memory (bench/_footprint-steps.mjs): node, code, enrichment,
 * store and app, each the RSS after a full collection.
 *
 * Writes bench/results/server-footprint.md with a verdict per target row (issue 22 targets 1 and 2).
 *
 *   npx tsx bench/server-footprint.ts [--rounds 5] [--idle 5]
 *   DATABASE_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432/postgres).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { flag } from './_args.ts';
import { SERVER_RUNTIME } from './_server-bundle.ts';
import { freePort } from '@rampart/plugin-kit/testing';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const ROUNDS = flag('rounds', 5);
const IDLE_SECONDS = flag('idle', 5);
const PG_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
// npm as the user's shell finds it (PATH); it runs the server with the first `node` on PATH.
const NPM = 'npm';

type Subject = 'bare' | 'pglite-first' | 'pglite-restart' | 'pg-first' | 'pg-restart' | 'node-pglite-first' | 'node-pglite-restart' | 'node-pg-restart';
const LABELS: Record<Subject, string> = {
  bare: 'bare fastify app (node)',
  'pglite-first': 'PGlite, first start (npm start)',
  'pglite-restart': 'PGlite, restart (npm start)',
  'pg-first': 'PostgreSQL, new database (npm start)',
  'pg-restart': 'PostgreSQL, restart (npm start)',
  'node-pglite-first': 'PGlite, first start (node dist/main.mjs)',
  'node-pglite-restart': 'PGlite, restart (node dist/main.mjs)',
  'node-pg-restart': 'PostgreSQL, restart (node dist/main.mjs)',
};
const SERVER_BUNDLE = join(root, 'apps', 'server', 'dist', 'main.mjs');

interface Sample {
  readySeconds: number;
  /** RSS of the whole tree after the idle wait, and per process name. */
  treeMb: number;
  byName: Record<string, number>;
  /** The server's node process alone. */
  serverMb: number;
  /** The tree again once /console/app.js was served. */
  afterConsoleMb: number;
  afterConsoleByName: Record<string, number>;
}


/** pid → [parent pid, name, RSS MB] of every process. */
function processTable(): Map<number, { ppid: number; name: string; rssMb: number }> {
  const table = new Map<number, { ppid: number; name: string; rssMb: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${entry}/status`, 'utf8'));
      table.set(Number(entry), { ppid, name, rssMb: m ? Number(m[1]) / 1024 : 0 });
    } catch {
      // exited while listed
    }
  }
  return table;
}

/** The tree under `pid` (itself included): total RSS, RSS per process name, and its deepest node process. */
function treeRss(pid: number): { totalMb: number; byName: Record<string, number>; serverMb: number } {
  const table = processTable();
  const byName: Record<string, number> = {};
  let totalMb = 0;
  let serverMb = 0;
  let serverDepth = -1;
  const walk = (p: number, depth: number) => {
    const row = table.get(p);
    if (!row) return;
    totalMb += row.rssMb;
    byName[row.name] = (byName[row.name] ?? 0) + row.rssMb;
    if (row.name === 'node' && depth > serverDepth) {
      serverDepth = depth;
      serverMb = row.rssMb;
    }
    for (const [child, c] of table) if (c.ppid === p) walk(child, depth + 1);
  };
  walk(pid, 0);
  return { totalMb, byName, serverMb };
}

async function waitReady(url: string, child: ChildProcess, t0: number): Promise<number> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode} before answering`);
    try {
      const res = await fetch(url);
      if (res.status === 200) {
        await res.arrayBuffer();
        return (performance.now() - t0) / 1000;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function measure(subject: Subject, env: Record<string, string>): Promise<Sample> {
  const port = await freePort();
  const [cmd, argv] = subject === 'bare' ? [process.execPath, [join(here, '_bare-fastify.mjs')]] : subject.startsWith('node-') ? [process.execPath, [...SERVER_RUNTIME.nodeArgs, SERVER_BUNDLE]] : [NPM, ['start']];
  const t0 = performance.now();
  // The store is the subject's own choice: a DATABASE_URL of the caller (which names the
  // PostgreSQL server for the PostgreSQL rows) would turn the PGlite rows into PostgreSQL ones.
  const inherited: NodeJS.ProcessEnv = { ...process.env };
  delete inherited.DATABASE_URL;
  const child = spawn(cmd, argv, { cwd: root, env: { ...inherited, ...(subject.startsWith('node-') ? SERVER_RUNTIME.env : {}), ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stderr = '';
  child.stdout!.resume();
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-2000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    const readySeconds = await waitReady(`http://127.0.0.1:${port}/api/v1/version`, child, t0).catch((err: unknown) => {
      throw new Error(`${subject}: ${String(err)}: ${stderr}`);
    });
    await sleep(IDLE_SECONDS * 1000);
    const idle = treeRss(child.pid!);
    if (subject !== 'bare') {
      const res = await fetch(`http://127.0.0.1:${port}/console/app.js`);
      if (res.status !== 200) throw new Error(`${subject}: /console/app.js answered ${res.status}`);
      await res.arrayBuffer();
      await sleep(1000);
    }
    const after = treeRss(child.pid!);
    return { readySeconds, treeMb: idle.totalMb, byName: idle.byName, serverMb: idle.serverMb, afterConsoleMb: after.totalMb, afterConsoleByName: after.byName };
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await Promise.race([exited, sleep(15_000)]);
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
  }
}

function databaseUrl(name: string): string {
  const u = new URL(PG_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function breakdown(env: { databaseUrl?: string; dataDir?: string }): Record<string, number> {
  const r = spawnSync(process.execPath, ['--expose-gc', join(here, '_footprint-steps.mjs')], { env: { ...process.env, FOOTPRINT: JSON.stringify(env) }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`footprint steps failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, number>;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const range = (xs: number[], digits: number) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;

async function main(): Promise<void> {
  const load0 = loadavg();
  const started = new Date().toISOString();
  const work = mkdtempSync(join(tmpdir(), 'rampart-footprint-'));
  const samples: Record<Subject, Sample[]> = { bare: [], 'pglite-first': [], 'pglite-restart': [], 'pg-first': [], 'pg-restart': [], 'node-pglite-first': [], 'node-pglite-restart': [], 'node-pg-restart': [] };
  // The rows without npm run the bundle as it is: build it first (npm start's own check, skipped when up to date).
  const built = spawnSync(process.execPath, [join(root, 'apps', 'server', 'scripts', 'build.mjs')], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('the server build failed');
  const dbs: string[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const dataDir = join(work, `data-${r}`);
      const nodeDataDir = join(work, `node-data-${r}`);
      const db = `rampart_footprint_${process.pid}_${r}`;
      await adminQuery(`create database ${db}`);
      dbs.push(db);
      const envs: Record<Subject, Record<string, string>> = {
        bare: {},
        'pglite-first': { DATA_DIR: dataDir },
        'pglite-restart': { DATA_DIR: dataDir },
        'pg-first': { DATABASE_URL: databaseUrl(db) },
        'pg-restart': { DATABASE_URL: databaseUrl(db) },
        'node-pglite-first': { DATA_DIR: nodeDataDir },
        'node-pglite-restart': { DATA_DIR: nodeDataDir },
        'node-pg-restart': { DATABASE_URL: databaseUrl(db) },
      };
      for (const subject of Object.keys(samples) as Subject[]) {
        const s = await measure(subject, envs[subject]);
        samples[subject].push(s);
        const names = Object.entries(s.byName).map(([n, mb]) => `${n} ${mb.toFixed(0)}`).join(', ');
        console.log(`round ${r + 1} ${LABELS[subject]}: ready ${s.readySeconds.toFixed(2)} s, tree ${s.treeMb.toFixed(0)} MB (${names}), after /console ${s.afterConsoleMb.toFixed(0)} MB`);
      }
    }
    const steps = { pglite: breakdown({ dataDir: join(work, 'data-0') }), postgres: breakdown({ databaseUrl: databaseUrl(dbs[0]!) }) };
    console.log(`breakdown: ${JSON.stringify(steps)}`);
    const load1 = loadavg();
    writeFileSync(join(here, 'results', 'server-footprint.md'), report(samples, steps, started, load0, load1));
    console.log('wrote bench/results/server-footprint.md');
  } finally {
    rmSync(work, { recursive: true, force: true });
    for (const db of dbs) await adminQuery(`drop database if exists ${db}`).catch(() => {});
  }
}

function report(samples: Record<Subject, Sample[]>, steps: Record<'pglite' | 'postgres', Record<string, number>>, started: string, load0: number[], load1: number[]): string {
  const bare = samples.bare;
  const bareReady = median(bare.map((s) => s.readySeconds));
  const bareTree = median(bare.map((s) => s.treeMb));
  const names = (s: Sample[], pick: (x: Sample) => Record<string, number>) => {
    const all = new Set(s.flatMap((x) => Object.keys(pick(x))));
    return [...all].map((n) => `${n} ${median(s.map((x) => pick(x)[n] ?? 0)).toFixed(0)}`).join(', ');
  };
  const rows = (Object.keys(samples) as Subject[]).map((subject) => {
    const s = samples[subject];
    const ready = s.map((x) => x.readySeconds);
    const tree = s.map((x) => x.treeMb);
    return `| ${LABELS[subject]} | ${median(ready).toFixed(2)} (${range(ready, 2)}) | ${(median(ready) / bareReady).toFixed(1)}× | ${median(tree).toFixed(0)} (${range(tree, 0)}) | ${(median(tree) / bareTree).toFixed(1)}× | ${names(s, (x) => x.byName)} | ${median(s.map((x) => x.serverMb)).toFixed(0)} | ${median(s.map((x) => x.afterConsoleMb)).toFixed(0)} (${names(s, (x) => x.afterConsoleByName)}) |`;
  });
  const verdict = (value: number, limit: number) => (value <= limit ? 'met' : 'missed');
  const m = (subject: Subject, pick: (x: Sample) => number) => median(samples[subject].map(pick));
  const targets: Array<[string, number, number, string]> = [
    ['idle RSS of the tree with npm (npm start), PGlite first start', m('pglite-first', (x) => x.treeMb), 200, 'MB'],
    ['idle RSS of the tree with npm (npm start), PGlite restart', m('pglite-restart', (x) => x.treeMb), 200, 'MB'],
    ['idle RSS of the tree with npm (npm start), PostgreSQL restart', m('pg-restart', (x) => x.treeMb), 120, 'MB'],
    ['idle RSS of the tree without npm (node dist/main.mjs), PGlite first start', m('node-pglite-first', (x) => x.treeMb), 200, 'MB'],
    ['idle RSS of the tree without npm (node dist/main.mjs), PGlite restart', m('node-pglite-restart', (x) => x.treeMb), 200, 'MB'],
    ['idle RSS of the tree without npm (node dist/main.mjs), PostgreSQL restart', m('node-pg-restart', (x) => x.treeMb), 120, 'MB'],
    ['start to ready with npm (npm start), PGlite first start', m('pglite-first', (x) => x.readySeconds), 4, 's'],
    ['start to ready with npm (npm start), PGlite existing store', m('pglite-restart', (x) => x.readySeconds), 1.5, 's'],
    ['start to ready with npm (npm start), PostgreSQL existing database', m('pg-restart', (x) => x.readySeconds), 1, 's'],
    ['start to ready without npm (node dist/main.mjs), PGlite first start', m('node-pglite-first', (x) => x.readySeconds), 4, 's'],
    ['start to ready without npm (node dist/main.mjs), PGlite existing store', m('node-pglite-restart', (x) => x.readySeconds), 1.5, 's'],
    ['start to ready without npm (node dist/main.mjs), PostgreSQL existing database', m('node-pg-restart', (x) => x.readySeconds), 1, 's'],
  ];
  const stepNames = ['node', 'code', 'enrichment', 'store', 'app'];
  const stepRow = (kind: 'pglite' | 'postgres') => {
    const s = steps[kind];
    let prev = 0;
    const cells = stepNames.map((n) => {
      const d = s[n]! - prev;
      prev = s[n]!;
      return d >= 0 ? `+${d.toFixed(0)}` : d.toFixed(0);
    });
    return `| ${kind === 'pglite' ? 'PGlite (existing data directory)' : 'PostgreSQL'} | ${cells.join(' | ')} | ${s.app!.toFixed(0)} |`;
  };
  return [
    '# Server start-up and idle memory (bench/server-footprint.ts)',
    '',
    `Run ${started}, Node ${process.version}, ${ROUNDS} alternating rounds, idle wait ${IDLE_SECONDS} s; load average at start ${load0.map((x) => x.toFixed(2)).join(' ')}, at end ${load1.map((x) => x.toFixed(2)).join(' ')} (2 cores).`,
    'Each cell: median (range). "Ready": spawn to the first 200 of GET /api/v1/version. RSS in MB (VmRSS) of every process of the tree.',
    '',
    '| subject | ready s | × bare | idle tree RSS MB | × bare | per process (median MB) | server process alone MB | tree after /console served MB |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    '## Targets (issue 22, 1 and 2)',
    '',
    '| target | measured (median) | limit | verdict |',
    '|---|---|---|---|',
    ...targets.map(([name, value, limit, unit]) => `| ${name} | ${value.toFixed(unit === 's' ? 2 : 0)} ${unit} | ≤ ${limit} ${unit} | ${verdict(value, limit)} |`),
    '',
    '## Where the server\'s memory goes (bench/_footprint-steps.mjs)',
    '',
    'One process, the bundle as `npm start` and `node apps/server/dist/main.mjs` run it; RSS after a full collection once each step is done (MB added by the step).',
    'Enrichment is loaded and asked once here whether or not the server would load it at start.',
    '',
    `| store | ${stepNames.join(' | ')} | total |`,
    '|---|---|---|---|---|---|---|',
    stepRow('pglite'),
    stepRow('postgres'),
    '',
    `Command: \`npx tsx bench/server-footprint.ts --rounds ${ROUNDS} --idle ${IDLE_SECONDS}\``,
    '',
  ].join('\n');
}

await main();
