import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/*
 * What `npm start` runs: scripts/build.mjs (skipped when nothing changed) and the bundle, which
 * serves the console built beside it without starting esbuild.
 */

const serverDir = fileURLToPath(new URL('..', import.meta.url));
const dist = join(serverDir, 'dist');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function build(): void {
  const r = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: serverDir, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
}

/** Children of `pid` by process name (from /proc). */
function childNames(pid: number): string[] {
  const names: string[] = [];
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) names.push(stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')));
    } catch {
      // exited while listed
    }
  }
  return names;
}

describe('the server bundle (npm start)', () => {
  it('is rebuilt only when an input changed', { timeout: 300_000 }, () => {
    build();
    const built = statSync(join(dist, 'main.mjs')).mtimeMs;
    build();
    expect(statSync(join(dist, 'main.mjs')).mtimeMs).toBe(built);
    // A source file or a migration (the template is migrated) saved again (same bytes, newer
    // time) makes the next start rebuild.
    for (const input of [join(serverDir, 'src', 'paths.ts'), join(serverDir, 'migrations', '0001_foundation.sql')]) {
      // Up to date first (the previous input's time put back is a change too).
      build();
      const before = statSync(join(dist, 'main.mjs')).mtimeMs;
      const { atime, mtime } = statSync(input);
      const later = new Date(Math.max(Date.now(), before) + 2000);
      utimesSync(input, later, later);
      try {
        build();
        expect(statSync(join(dist, 'main.mjs')).mtimeMs).toBeGreaterThan(before);
      } finally {
        utimesSync(input, atime, mtime);
      }
    }
    build();
  });

  it('makes a new store from the build\'s template, serves the console built beside it and starts no esbuild process', { timeout: 180_000 }, async () => {
    build();
    const dataDir = mkdtempSync(join(tmpdir(), 'rampart-bundle-'));
    dirs.push(dataDir);
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    const child = spawn(process.execPath, ['dist/main.mjs'], { cwd: serverDir, env: { ...rest, DATA_DIR: dataDir, PORT: '0', RAMPART_DEMO: 'false' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    try {
      const deadline = Date.now() + 90_000;
      while (!/control plane listening/.test(out)) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start: ${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const base = (JSON.parse(out.split('\n').find((l) => l.includes('control plane listening'))!) as { url: string }).url.replace(/\/api\/v1$/, '');
      const res = await fetch(`${base}/console/app.js`);
      expect(res.status).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(dist, 'console', 'app.js')))).toBe(true);
      const page = await fetch(`${base}/console/`);
      expect(await page.text()).toBe(readFileSync(join(dist, 'console', 'index.html'), 'utf8'));
      expect(childNames(child.pid!)).toEqual([]);
      // The store is a copy of dist/pgdata-template (initdb would have drawn a new system
      // identifier, pg_control's first 8 bytes), made private like any store.
      const identifier = (dir: string) => readFileSync(join(dir, 'global', 'pg_control')).subarray(0, 8).toString('hex');
      expect(identifier(dataDir)).toBe(identifier(join(dist, 'pgdata-template')));
      expect(statSync(join(dataDir, 'PG_VERSION')).mode & 0o777).toBe(0o600);
      expect(statSync(join(dataDir, 'base')).mode & 0o777).toBe(0o700);
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('holds its dependencies: only those that read files beside their own modules (and optional add-ons) load from node_modules', { timeout: 300_000 }, () => {
    build();
    const files = ['main.mjs', 'embed.mjs', ...readdirSync(join(dist, 'chunks')).filter((f) => f.endsWith('.mjs')).map((f) => join('chunks', f))];
    const external = new Set<string>();
    for (const file of files) {
      const code = readFileSync(join(dist, file), 'utf8');
      for (const m of code.matchAll(/(?:from |import\(|__require\()"([^".][^"]*)"/g)) if (!isBuiltin(m[1]!)) external.add(m[1]!);
    }
    // fastify, zod, pg, ws, prom-client, jose… are in the bundle: a start no longer resolves them file by file.
    expect([...external].sort()).toEqual(['@electric-sql/pglite', '@electric-sql/pglite/nodefs', '@fastify/swagger', '@fastify/swagger-ui', 'bufferutil', 'pg-native', 'pino', 'utf-8-validate']);
  });

  it('runs the operators\' `rampart` command from the bundle with plain Node: bin/rampart.js loads no TypeScript loader', { timeout: 300_000 }, () => {
    build();
    // bin/rampart.js imports the build check and dist/cli.mjs, nothing else; the CLI bundle never names tsx.
    const bin = readFileSync(join(serverDir, 'bin/rampart.js'), 'utf8');
    expect([...bin.matchAll(/await import\('([^']+)'\)/g)].map((m) => m[1])).toEqual(['../scripts/build.mjs', '../dist/cli.mjs']);
    const files = ['cli.mjs', ...readdirSync(join(dist, 'chunks')).filter((f) => f.endsWith('.mjs')).map((f) => join('chunks', f))];
    expect(files.filter((f) => /["']tsx(\/[^"']*)?["']/.test(readFileSync(join(dist, f), 'utf8')))).toEqual([]);
    const dataDir = mkdtempSync(join(tmpdir(), 'rampart-cli-bundle-'));
    dirs.push(dataDir);
    const { DATABASE_URL: _ignored, ...env } = process.env;
    const r = spawnSync(process.execPath, ['bin/rampart.js', 'org', 'list'], { cwd: serverDir, env: { ...env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, encoding: 'utf8' });
    expect([r.status, r.stdout, r.stderr]).toEqual([0, 'GID  NAME  TRUST  DELAY  BALANCE  USERS  CREATED_AT\n', '']);
  });
});
