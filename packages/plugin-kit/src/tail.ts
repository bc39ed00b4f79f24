import { open, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { watch } from 'chokidar';
import type { PluginLogger } from './logger.ts';
import type { OffsetStore, TailPosition } from './offset-store.ts';

export interface TailOptions {
  path: string;
  /** Receives complete lines (no newline, no trailing CR) and the read time in epoch seconds. */
  onLines(lines: string[], readAt: number): void;
  signal: AbortSignal;
  /** Resume point; saved after every batch of lines. */
  offsets?: OffsetStore;
  /** Key under which the position is stored; defaults to the path. */
  key?: string;
  /** Where to start in a file never seen before: `end` (default) skips its history. */
  startAt?: 'end' | 'beginning';
  /** Safety net besides file-system events (and the only trigger on file systems without them). */
  pollIntervalMs?: number;
  log?: PluginLogger;
  /**
   * Test seam: awaited after every read of the file, with the position read at and the bytes
   * it returned, so a test can land a writer's action (a copy-truncate) between two reads.
   */
  afterRead?(position: number, bytesRead: number): Promise<void> | void;
}

export interface Tail {
  /** Resolves once the start position is known and watching has begun. */
  ready: Promise<void>;
  /** Resolves after `signal` aborts and the last position is saved; rejects on a read failure. */
  done: Promise<void>;
}

const CHUNK = 64 * 1024;
const EMPTY = Buffer.alloc(0);
const HEAD_BYTES = 64;
/** A line longer than this is dropped (a runaway writer must not exhaust memory). */
const MAX_LINE = 64 * 1024;

/**
 * Follows a log file like `tail -F`: survives rotation by rename (drains the old file, then
 * reads the new one from its start) and by copy-truncate (size below the position, or the first
 * bytes changed: start again at 0), and resumes from a persisted position without reading any
 * line twice. Reads are serialised; chokidar events and a poll timer only ask for a read.
 */
export function tailFile(options: TailOptions): Tail {
  const key = options.key ?? options.path;
  let handle: FileHandle | undefined;
  let ino = -1;
  let offset = 0;
  let head = '';
  let readPos = 0;
  let partial: Buffer = EMPTY;
  let dropping = false;
  let running: Promise<void> | undefined;
  let again = false;
  let failed: unknown;
  let readyResolve!: () => void;
  const ready = new Promise<void>((resolve) => (readyResolve = resolve));

  async function readHead(h: FileHandle): Promise<string> {
    const buf = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await h.read(buf, 0, HEAD_BYTES, 0);
    return buf.subarray(0, bytesRead).toString('hex');
  }

  /** Splits a chunk read at `readPos` into lines; `offset` moves to just after the last newline. */
  function emit(chunk: Buffer): void {
    const lines: string[] = [];
    let start = 0;
    let nl = chunk.indexOf(10);
    while (nl !== -1) {
      if (!dropping) {
        const piece = partial.length > 0 ? Buffer.concat([partial, chunk.subarray(start, nl)]) : chunk.subarray(start, nl);
        const end = piece.length > 0 && piece[piece.length - 1] === 13 ? piece.length - 1 : piece.length;
        lines.push(piece.toString('utf8', 0, end));
      }
      partial = EMPTY;
      dropping = false;
      offset = readPos + nl + 1;
      start = nl + 1;
      nl = chunk.indexOf(10, start);
    }
    if (start < chunk.length && !dropping) {
      partial = Buffer.concat([partial, chunk.subarray(start)]);
      if (partial.length > MAX_LINE) {
        options.log?.warn({ path: options.path, offset }, 'over-long line dropped');
        dropping = true;
        partial = EMPTY;
      }
    }
    readPos += chunk.length;
    if (lines.length > 0) options.onLines(lines, Date.now() / 1000);
  }

  /**
   * Reads from `readPos` to the end. The head fingerprint grows from the very bytes these reads
   * return: a separate read of the head after the last one could see a file copy-truncated and
   * rewritten in between, and the next cycle would then take the new file for the old one and
   * skip its start.
   */
  async function readToEnd(h: FileHandle): Promise<void> {
    const buf = Buffer.alloc(CHUNK);
    for (;;) {
      const { bytesRead } = await h.read(buf, 0, CHUNK, readPos);
      await options.afterRead?.(readPos, bytesRead);
      if (bytesRead === 0) break;
      // `head` covers the bytes before readPos (from openCurrent or earlier reads); a file
      // drained from a stored offset has no head yet and keeps none.
      if (readPos < HEAD_BYTES && head.length >= readPos * 2) head = head.slice(0, readPos * 2) + buf.toString('hex', 0, Math.min(bytesRead, HEAD_BYTES - readPos));
      emit(buf.subarray(0, bytesRead));
    }
  }

  function restartAt(position: number): void {
    offset = position;
    readPos = position;
    partial = EMPTY;
    dropping = false;
  }

  async function openCurrent(position: 'start' | 'end'): Promise<boolean> {
    let h: FileHandle;
    try {
      h = await open(options.path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
    const st = await h.stat();
    handle = h;
    ino = st.ino;
    restartAt(position === 'end' ? st.size : 0);
    head = await readHead(h);
    return true;
  }

  let saved = '';
  /** Persists the position when it changed (a poll that read nothing writes nothing). */
  async function save(): Promise<void> {
    if (!options.offsets || ino === -1) return;
    const position: TailPosition = { ino, offset, head };
    const text = JSON.stringify(position);
    if (text === saved) return;
    await options.offsets.save(key, position);
    saved = text;
  }

  async function cycle(): Promise<void> {
    if (!handle) {
      if (!(await openCurrent('start'))) return;
      options.log?.info({ path: options.path }, 'tailing file');
    }
    let current: Awaited<ReturnType<typeof stat>> | undefined;
    try {
      current = await stat(options.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (current === undefined || current.ino !== ino) {
      // Renamed away (and maybe replaced): finish the old file through our descriptor first.
      await readToEnd(handle!);
      if (current === undefined) return void (await save());
      await handle!.close();
      handle = undefined;
      options.log?.info({ path: options.path }, 'log file rotated');
      if (!(await openCurrent('start'))) return;
    } else {
      const size = (await handle!.stat()).size;
      const now = await readHead(handle!);
      if (size < readPos || !sameStart(now, head)) {
        options.log?.info({ path: options.path }, 'log file truncated');
        restartAt(0);
        head = now;
      }
    }
    await readToEnd(handle!);
    await save();
  }

  function kick(): void {
    if (failed !== undefined || options.signal.aborted) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        await cycle();
      } while (again && !options.signal.aborted);
    })()
      .catch((err: unknown) => {
        failed = err;
        abortAll();
      })
      .finally(() => (running = undefined));
  }

  /**
   * After a restart the file we were reading may have been rotated away (`auth.log.1`,
   * `auth.log-20250601`): find it by inode and first bytes and finish it before the new file.
   */
  async function drainRotated(stored: TailPosition): Promise<void> {
    const dir = dirname(options.path);
    const base = basename(options.path);
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names) {
      if (name === base || !name.startsWith(base) || /\.(?:gz|bz2|xz|zst)$/.test(name)) continue;
      const h = await open(join(dir, name), 'r').catch(() => undefined);
      if (!h) continue;
      try {
        const st = await h.stat();
        if (st.ino !== stored.ino || stored.offset > st.size || !sameStart(await readHead(h), stored.head)) continue;
        options.log?.info({ path: join(dir, name) }, 'finishing a file rotated while stopped');
        restartAt(stored.offset);
        await readToEnd(h);
        // A rotated file is complete: a last line without newline is still a line.
        if (partial.length > 0 && !dropping) options.onLines([partial.toString('utf8').replace(/\r$/, '')], Date.now() / 1000);
        return;
      } finally {
        await h.close();
      }
    }
  }

  let abortAll = () => {};
  const done = (async () => {
    const stored = await options.offsets?.load(key);
    if (stored && (await stat(options.path).catch(() => undefined))?.ino !== stored.ino) await drainRotated(stored);
    if (await openCurrent(options.startAt === 'beginning' || stored ? 'start' : 'end')) {
      const st = await handle!.stat();
      if (stored && stored.ino === ino && stored.offset <= st.size && sameStart(head, stored.head)) {
        restartAt(stored.offset);
      }
    }
    const watcher = watch(options.path, { ignoreInitial: true, persistent: true });
    watcher.on('all', kick);
    watcher.on('error', (err) => options.log?.warn({ err, path: options.path }, 'file watch failed'));
    const timer = setInterval(kick, options.pollIntervalMs ?? 1000);
    await new Promise<void>((resolve) => {
      abortAll = resolve;
      if (options.signal.aborted) resolve();
      options.signal.addEventListener('abort', () => resolve(), { once: true });
      readyResolve();
      kick();
    });
    clearInterval(timer);
    await watcher.close();
    while (running) await running;
    if (failed !== undefined) {
      await handle?.close();
      throw failed;
    }
    await save();
    await handle?.close();
  })();
  done.catch(() => readyResolve());
  return { ready, done };
}

/** Whether two head fingerprints agree on the bytes both have seen. */
function sameStart(a: string, b: string): boolean {
  return a.length <= b.length ? b.startsWith(a) : a.startsWith(b);
}
