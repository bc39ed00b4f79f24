import { chmodSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The embedded store's files hold every API key hash, the signing secrets and the indicators:
 * private to the server's user. Directories 0700, files 0600, existing ones included (stores
 * made before this, or by PGlite under a permissive umask, held 0666 files). Symbolic links are
 * left alone (chmod would follow them out of the directory).
 */
export function makePrivate(dir: string): void {
  chmodSync(dir, 0o700);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) makePrivate(path);
    else if (entry.isFile() && (lstatSync(path).mode & 0o777) !== 0o600) chmodSync(path, 0o600);
  }
}

/**
 * Files PGlite creates later (WAL segments, relations) get their mode from the process umask:
 * its file system opens them with 0666. The umask is process-wide; a process that opens an
 * embedded store owns that store, so everything it writes is kept private as well.
 */
export function restrictUmask(): void {
  process.umask(process.umask() | 0o077);
}
