/*
 * The operators' `rampart` command, as operators run it: the bundle (apps/server/dist/cli.mjs,
 * what bin/rampart.js and `npm run rampart` run) with plain Node. Every list command on an
 * existing embedded store (PGlite in DATA_DIR) and on PostgreSQL (a new database on the server of
 * DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres; dropped at the end), each
 * against `node -e 0` measured in the same run, in alternating rounds: wall time from spawn to
 * exit, medians and ranges. Targets (issue 31): ≤ 1.5 s on the embedded store, ≤ 1 s on
 * PostgreSQL, on a quiet machine.
 *
 *   npx tsx bench/cli.ts [--rounds 5]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { flag } from './_args.ts';
import { buildServerBundle } from './_server-bundle.ts';

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, '..', 'apps', 'server', 'dist', 'cli.mjs');
const rounds = flag('rounds', 5);
const TARGET = { embedded: 1.5, postgres: 1.0 } as const;

type Env = Record<string, string>;
/** Only what the command needs: no DATABASE_URL or DATA_DIR of the caller leaks into the other store's runs. */
const baseEnv = (): Env => ({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', LOG_LEVEL: 'warn' });

function run(argv: string[], env: Env): { seconds: number; stdout: string } {
  const start = process.hrtime.bigint();
  const r = spawnSync(argv[0]!, argv.slice(1), { env, encoding: 'utf8' });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  return { seconds, stdout: r.stdout };
}
const rampart = (args: string[], env: Env) => run([process.execPath, cli, ...args], env);

/**
 * One measured run: wall seconds (spawn to exit) and the CPU seconds (user + system) the command
 * used, from bash's `times` (the machine is shared: CPU time barely moves with the load, wall time
 * does). The wall time includes bash's own start (a few ms).
 */
function timed(argv: string[], env: Env): { wall: number; cpu: number } {
  const start = process.hrtime.bigint();
  const r = spawnSync('bash', ['-c', '"$@" >/dev/null; s=$?; times; exit $s', 'bash', ...argv], { env, encoding: 'utf8' });
  const wall = Number(process.hrtime.bigint() - start) / 1e9;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  const children = r.stdout.trim().split('\n').at(-1)!.split(/\s+/);
  const sec = (t: string) => {
    const m = /^(\d+)m([\d.]+)s$/.exec(t)!;
    return Number(m[1]) * 60 + Number(m[2]);
  };
  return { wall, cpu: sec(children[0]!) + sec(children[1]!) };
}

/** An organization with an admin, a key and a contributor: what the list commands read. */
function seed(env: Env): string {
  rampart(['migrate'], env);
  const { gid } = JSON.parse(rampart(['org', 'create', '--name', 'Bench CERT', '--credits', '1000', '--trust', '0.7'], env).stdout) as { gid: string };
  for (let i = 2; i <= 5; i += 1) rampart(['org', 'create', '--name', `Bench org ${i}`], env);
  rampart(['user', 'create', '--org', gid, '--username', 'admin@bench.example', '--role', '3'], env);
  rampart(['user', 'create', '--org', gid, '--username', 'soc@bench.example', '--role', '2'], env);
  rampart(['key', 'create', '--username', 'admin@bench.example', '--label', 'bench'], env);
  rampart(['key', 'create', '--username', 'soc@bench.example', '--label', 'siem'], env);
  return gid;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const f2 = (x: number) => x.toFixed(2);
const cell = (xs: number[]) => `${f2(median(xs))} (${f2(Math.min(...xs))}–${f2(Math.max(...xs))})`;

interface Row {
  store: keyof typeof TARGET;
  command: string;
  times: number[];
  cpu: number[];
}

function measure(store: keyof typeof TARGET, env: Env, gid: string, baseline: { wall: number[]; cpu: number[] }): Row[] {
  const commands = [
    ['org', 'list'],
    ['user', 'list', '--org', gid],
    ['key', 'list', '--org', gid],
    ['agent', 'list', '--org', gid],
    ['decision', 'list', '--org', gid],
  ];
  const rows = commands.map((c) => ({ store, command: `rampart ${c.join(' ').replace(gid, 'RMP-GID-…')}`, times: [] as number[], cpu: [] as number[] }));
  // One warm-up of each (the file cache), then alternating rounds: node -e 0, every command.
  for (const c of commands) rampart(c, env);
  for (let r = 0; r < rounds; r += 1) {
    const b = timed([process.execPath, '-e', '0'], baseEnv());
    baseline.wall.push(b.wall);
    baseline.cpu.push(b.cpu);
    commands.forEach((c, i) => {
      const t = timed([process.execPath, cli, ...c], env);
      rows[i]!.times.push(t.wall);
      rows[i]!.cpu.push(t.cpu);
    });
  }
  return rows;
}

buildServerBundle();
const loadBefore = loadavg().map((l) => l.toFixed(2)).join(' ');
const baseline = { wall: [] as number[], cpu: [] as number[] };
const rows: Row[] = [];

const dataDir = mkdtempSync(join(tmpdir(), 'rampart-bench-cli-'));
try {
  const env = { ...baseEnv(), DATA_DIR: dataDir };
  rows.push(...measure('embedded', env, seed(env), baseline));
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}

const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `rampart_bench_cli_${process.pid}`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`create database "${dbName}"`);
try {
  const url = new URL(serverUrl);
  url.pathname = `/${dbName}`;
  const env = { ...baseEnv(), DATABASE_URL: url.toString() };
  rows.push(...measure('postgres', env, seed(env), baseline));
} finally {
  await admin.query(`drop database if exists "${dbName}" with (force)`);
  await admin.end();
}
const loadAfter = loadavg().map((l) => l.toFixed(2)).join(' ');

const storeName = { embedded: 'embedded store (PGlite)', postgres: 'PostgreSQL' } as const;
const lines = [
  '# Operator CLI: list commands (bench/cli.ts)',
  '',
  `Run ${new Date().toISOString()}, Node ${process.version}, ${rounds} alternating rounds per store (after one warm-up run of each command); load average at start ${loadBefore}, at end ${loadAfter} (2 cores).`,
  'Each cell: median (range) in seconds. Wall: spawn to exit (through bash, whose `times` gives the CPU column). CPU: user + system seconds of the command, which the load of a shared machine barely changes. The command is the bundle `node apps/server/dist/cli.mjs` (what `bin/rampart.js` runs after its up-to-date check); the store already exists (migrated, 5 organizations, 2 users, 2 keys).',
  '',
  `\`node -e 0\` in the same rounds: wall ${cell(baseline.wall)} s, CPU ${cell(baseline.cpu)} s.`,
  '',
  '| store | command | wall s | × node -e 0 | CPU s | target (wall) | verdict |',
  '|---|---|---|---|---|---|---|',
  ...rows.map((r) => {
    const m = median(r.times);
    return `| ${storeName[r.store]} | \`${r.command}\` | ${cell(r.times)} | ${(m / median(baseline.wall)).toFixed(1)}× | ${cell(r.cpu)} | ≤ ${TARGET[r.store]} s | ${m <= TARGET[r.store] ? 'met' : 'missed'} |`;
  }),
  '',
];
const out = join(here, 'results', 'cli.md');
writeFileSync(out, `${lines.join('\n')}\n`);
process.stdout.write(`${lines.join('\n')}\nwrote ${out}\n`);
