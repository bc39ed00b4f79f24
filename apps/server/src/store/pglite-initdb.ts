import { spawn } from 'node:child_process';
import { closeSync, fsyncSync, openSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * A new embedded store's initdb, run in a child process. PGlite runs initdb in a WebAssembly
 * instance of its own; in the server's process its hundreds of MB outlive it (V8 keeps the pages
 * while the server idles: 775 MB idle after a first start against 413 MB after a restart). In a
 * child they go back to the system when it exits, and the server opens an initialized directory
 * exactly as on a restart. The child inherits the umask the caller set, so files come out private.
 */
export async function initdbInChild(dataDir: string): Promise<void> {
  const pglite = pathToFileURL(createRequire(import.meta.url).resolve('@electric-sql/pglite')).href;
  const script = `const { PGlite } = await import(${JSON.stringify(pglite)});
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
  // PGlite as shipped syncs nothing: what initdb wrote reaches the disk before the store is used.
  syncTree(dataDir);
}

function syncTree(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) syncTree(path);
    else if (entry.isFile()) syncPath(path);
  }
  syncPath(dir);
}

function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
