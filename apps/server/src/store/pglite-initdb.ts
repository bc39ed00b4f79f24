import { spawn } from 'node:child_process';
import { cpSync, existsSync, readdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { serverPath } from '../paths.ts';
import { makePrivate } from './data-dir-permissions.ts';

/** `true` in the server's bundle (scripts/build.mjs defines it); undeclared when the sources run. */
declare const RAMPART_BUNDLE: boolean | undefined;

/**
 * The data directory scripts/build.mjs initialized beside the bundle (dist/pgdata-template), with
 * the same PGlite the bundle runs (a new lock file rebuilds it). Null when the sources run: they
 * always run initdb, so that no template older than the code is ever used.
 */
export function dataDirTemplate(): string | null {
  const dir = serverPath('dist', 'pgdata-template');
  return typeof RAMPART_BUNDLE !== 'undefined' && RAMPART_BUNDLE && existsSync(join(dir, 'PG_VERSION')) ? dir : null;
}

/**
 * Makes a new embedded store's data directory: a copy of the build's initialized template when
 * there is one (tens of milliseconds), else initdb in a child process (seconds). Either way its
 * files are private and on disk before the store is used.
 */
export async function initializeDataDir(dataDir: string): Promise<void> {
  const template = dataDirTemplate();
  if (!template) return initdbInChild(dataDir);
  return copyDataDirTemplate(template, dataDir);
}

/** A new data directory as a copy of `template`: private (0700/0600) whatever the template's modes, and on disk. */
export async function copyDataDirTemplate(template: string, dataDir: string): Promise<void> {
  cpSync(template, dataDir, { recursive: true });
  makePrivate(dataDir);
  await syncTree(dataDir);
}

/**
 * A new embedded store's initdb, run in a child process. PGlite runs initdb in a WebAssembly
 * instance of its own; in the server's process its hundreds of MB outlive it (V8 keeps the pages
 * while the server idles: 775 MB idle after a first start against 413 MB after a restart). In a
 * child they go back to the system when it exits, and the server opens an initialized directory
 * exactly as on a restart. PGlite's file system there is its own (it sets modes by chmod, 0666 for
 * most files, whatever the umask): what it made is made private (0700/0600) before anything else
 * opens it, whoever asked (the server, the rampart command, the build's template).
 */
export async function initdbInChild(dataDir: string): Promise<void> {
  const pglite = pathToFileURL(createRequire(import.meta.url).resolve('@electric-sql/pglite')).href;
  const script = `process.umask(0o077);
const { PGlite } = await import(${JSON.stringify(pglite)});
const db = await PGlite.create(process.env.RAMPART_INITDB_DIR);
await db.close();`;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, RAMPART_INITDB_DIR: dataDir },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`initdb of the embedded store in ${dataDir} failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`)),
    );
  });
  makePrivate(dataDir);
  // PGlite as shipped syncs nothing: what initdb wrote reaches the disk before the store is used.
  await syncTree(dataDir);
}

/**
 * fsync of every file and directory of a new data directory, all at once: the file system's
 * journal then commits many of them together (1,136 files of a template: 5.5 s one after the
 * other, 0.46 s at once here), and a first start waited for them one by one.
 */
async function syncTree(dir: string): Promise<void> {
  const paths: string[] = [];
  const collect = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) collect(path);
      else if (entry.isFile()) paths.push(path);
    }
    paths.push(d);
  };
  collect(dir);
  await Promise.all(paths.map(syncPath));
}

async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
