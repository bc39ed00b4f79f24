import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Who holds a data directory: `server` (npm start) or `cli` (the rampart command). */
export type LockOwner = 'server' | 'cli';

interface LockRecord {
  pid: number;
  owner: LockOwner;
  /** The process's start time in clock ticks since boot (Linux), so a reused pid is not mistaken for the holder. */
  start?: string;
}

export const LOCK_FILE = 'rampart.lock';

/** Another live process holds the embedded store's data directory. */
export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
  constructor(
    readonly dataDir: string,
    readonly holder: { pid: number; owner: LockOwner },
  ) {
    super(`${dataDir} is in use by ${holder.owner === 'server' ? 'the Rampart server' : 'the rampart command'} (pid ${holder.pid})`);
  }
}

function startTime(pid: number): string | undefined {
  try {
    // Field 22 of /proc/<pid>/stat; the command name (field 2) may hold spaces, so count after its ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function alive(record: LockRecord): boolean {
  try {
    process.kill(record.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const start = record.start === undefined ? undefined : startTime(record.pid);
  return start === undefined || start === record.start;
}

function readLock(file: string): LockRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockRecord>;
    return typeof record.pid === 'number' && (record.owner === 'server' || record.owner === 'cli') ? (record as LockRecord) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the data directory for this process alone: PGlite is one PostgreSQL with no
 * multi-process locking, and two instances writing one directory corrupt it (a key created by
 * the CLI while the server runs was never seen, then lost). The lock is a file created with
 * O_EXCL holding the pid; a lock whose process is gone (killed, crashed, or its pid reused by
 * another program) is stale and taken over. Returns the release, which removes the file only
 * while it is still this process's.
 */
export function lockDataDir(dataDir: string, owner: LockOwner): () => void {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, LOCK_FILE);
  const mine: LockRecord = { pid: process.pid, owner, ...(startTime(process.pid) ? { start: startTime(process.pid)! } : {}) };
  for (let attempt = 0; ; attempt += 1) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      try {
        writeSync(fd, `${JSON.stringify(mine)}\n`);
      } finally {
        closeSync(fd);
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
      const held = readLock(file);
      if (held && alive(held)) throw new DataDirLockedError(dir, held);
      // Stale (or unreadable: a holder killed while writing it): take it over.
      unlinkSync(file);
    }
  }
  return () => {
    if (readLock(file)?.pid === process.pid) unlinkSync(file);
  };
}
