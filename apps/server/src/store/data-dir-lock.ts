import { randomBytes } from 'node:crypto';
import { closeSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Who holds a data directory: `server` (npm start) or `cli` (the rampart command). */
export type LockOwner = 'server' | 'cli';

interface HolderRecord {
  pid: number;
  owner: LockOwner;
  /** The process's start time in clock ticks since boot (Linux), so a reused pid is not mistaken for the holder. */
  start?: string;
}

/** What a lock file says: held by a process, or released by its last holder. */
type LockRecord = HolderRecord | { released: true };

/** The lock's files are `rampart.lock.<generation>`; the highest generation is the lock's state. */
export const LOCK_FILE = 'rampart.lock';
const GENERATION = /^rampart\.lock\.(\d{1,15})$/;
const TEMP = /^\.rampart\.lock\.tmp-(\d+)-[0-9a-f]+$/;

/** Another live process holds the embedded store's data directory. */
export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
  readonly dataDir: string;
  readonly holder: { pid: number; owner: LockOwner };
  constructor(dataDir: string, holder: { pid: number; owner: LockOwner }) {
    super(`${dataDir} is in use by ${holder.owner === 'server' ? 'the Rampart server' : 'the rampart command'} (pid ${holder.pid})`);
    this.dataDir = dataDir;
    this.holder = holder;
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

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function alive(record: HolderRecord): boolean {
  if (!pidAlive(record.pid)) return false;
  const start = record.start === undefined ? undefined : startTime(record.pid);
  return start === undefined || start === record.start;
}

function isHolder(record: LockRecord | 'unreadable' | undefined): record is HolderRecord {
  return typeof record === 'object' && 'pid' in record;
}

/** The record in `file`; undefined when it is gone; 'unreadable' when it holds no record. */
function readRecord(file: string): LockRecord | 'unreadable' | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const record = JSON.parse(text) as Partial<HolderRecord> & { released?: unknown };
    if (record.released === true) return { released: true };
    return typeof record.pid === 'number' && (record.owner === 'server' || record.owner === 'cli') ? (record as HolderRecord) : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

/** The generations present, lowest first. */
function generations(dir: string): number[] {
  return readdirSync(dir)
    .map((name) => GENERATION.exec(name)?.[1])
    .filter((g): g is string => g !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

const generationFile = (dir: string, generation: number) => join(dir, `${LOCK_FILE}.${generation}`);

function unlinkIfThere(file: string): void {
  try {
    unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * Publishes `record` as generation `generation`, complete or not at all: it is written to a file
 * of this process's own, then hard-linked to its name, which fails when that name exists (a link
 * never replaces a file, and nobody ever sees it half written). False: another process has it.
 */
function publish(dir: string, generation: number, record: LockRecord): boolean {
  const temp = join(dir, `.${LOCK_FILE}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(record)}\n`);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temp, generationFile(dir, generation));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(temp);
  }
}

/** What a process killed while taking or releasing the lock left: older generations, its temporary files, a lock of the former format. */
function removeLeftovers(dir: string, mine: number): void {
  for (const generation of generations(dir)) if (generation < mine) unlinkIfThere(generationFile(dir, generation));
  for (const name of readdirSync(dir)) {
    const pid = TEMP.exec(name)?.[1];
    if (pid !== undefined && Number(pid) !== process.pid && !pidAlive(Number(pid))) unlinkIfThere(join(dir, name));
  }
  const legacy = readRecord(join(dir, LOCK_FILE));
  if (legacy !== undefined) unlinkIfThere(join(dir, LOCK_FILE));
}

const MAX_ATTEMPTS = 1000;

/**
 * Takes the data directory for this process alone: PGlite is one PostgreSQL with no
 * multi-process locking, and two instances writing one directory corrupt it (a key created by
 * the CLI while the server runs was never seen, then lost).
 *
 * The lock is a sequence of generations, `rampart.lock.1`, `.2`, …; the highest one present says
 * who holds the directory (its pid, owner and process start time) or that it was released. A
 * process takes the lock by publishing the next generation (publish: written under a name of its
 * own, then hard-linked into place, so a lock file is never seen half written and is never
 * replaced): of several processes that saw the same free or stale generation, exactly one creates
 * the next and the others find it taken. Nothing ever removes the highest generation, so a
 * process slow to act on what it read can only fail; one that published below the highest steps
 * back. A generation whose holder is gone (killed, crashed, its pid reused by another program) is
 * stale and taken over that way; so is one that holds no record. Returns the release, which
 * publishes a "released" generation while this process is still the holder.
 */
export function lockDataDir(dataDir: string, owner: LockOwner): () => void {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const start = startTime(process.pid);
  const mine: HolderRecord = { pid: process.pid, owner, ...(start ? { start } : {}) };
  // The former format: one file created with O_EXCL by an older version still running.
  const legacy = readRecord(join(dir, LOCK_FILE));
  if (isHolder(legacy) && alive(legacy)) throw new DataDirLockedError(dir, legacy);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
    const top = generations(dir).at(-1) ?? 0;
    if (top > 0) {
      const record = readRecord(generationFile(dir, top));
      // Removed meanwhile: a holder above it cleared it away. Look again.
      if (record === undefined) continue;
      if (isHolder(record) && alive(record)) throw new DataDirLockedError(dir, record);
    }
    const generation = top + 1;
    if (!publish(dir, generation, mine)) continue;
    if ((generations(dir).at(-1) ?? 0) > generation) {
      // Someone took a later generation while this one was being taken: theirs stands.
      unlinkIfThere(generationFile(dir, generation));
      continue;
    }
    removeLeftovers(dir, generation);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if ((generations(dir).at(-1) ?? 0) !== generation) return;
      const record = readRecord(generationFile(dir, generation));
      if (!isHolder(record) || record.pid !== process.pid) return;
      if (publish(dir, generation + 1, { released: true })) unlinkIfThere(generationFile(dir, generation));
    };
  }
  throw new Error(`could not take the lock of ${dir} after ${MAX_ATTEMPTS} attempts`);
}

/** Who holds `dataDir` now (null when nobody does): for the tests and tools that need to know. */
export function dataDirHolder(dataDir: string): { pid: number; owner: LockOwner } | null {
  const dir = resolve(dataDir);
  let top: number | undefined;
  try {
    top = generations(dir).at(-1);
  } catch {
    return null;
  }
  if (top === undefined) return null;
  const record = readRecord(generationFile(dir, top));
  return isHolder(record) && alive(record) ? { pid: record.pid, owner: record.owner } : null;
}
