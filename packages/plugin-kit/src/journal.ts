import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { LineParser, RunningSource, SourceContext } from './source.ts';

/*
 * Sources that read the systemd journal (`journal:<unit or identifier>`, `journal:kernel`):
 * `journalctl --follow --output=json` piped into the source's line parser, which takes the
 * journal's own fields (`_PID`, `_COMM`/`SYSLOG_IDENTIFIER`, `__REALTIME_TIMESTAMP`, `MESSAGE`)
 * instead of a syslog prefix (`parseJournalJson`).
 *
 * Where it resumes: the `__CURSOR` of the last entry handed on is written to a file in the
 * agent's state directory after each batch of entries is parsed and emitted, and a restart
 * starts after it. The agent writes that file, not journalctl: `journalctl --cursor-file`
 * writes its file only when it exits by itself, with the last entry it PRINTED — systemd 252
 * never writes it in `--follow` mode (SIGTERM ends it without a write), and a journalctl that
 * wrote it would count entries still in the pipe of an agent killed with SIGKILL as read. So
 * the saved cursor is passed with `--after-cursor`: what was emitted is never read again, what
 * was not is read after the restart.
 */

/** Local options of a journal source: read journal files from elsewhere than the system journal. */
export const JournalOptions = z.object({
  /** `journalctl --directory`: the journal files of this directory (e.g. from systemd-journal-remote). */
  journal_directory: z.string().min(1).max(4096).optional(),
  /** `journalctl --file`: one journal file (globs allowed, as journalctl takes them). */
  journal_file: z.string().min(1).max(4096).optional(),
});
export type JournalOptions = z.infer<typeof JournalOptions>;

/** The prefix of a source location that is read from the journal. */
export const JOURNAL_PREFIX = 'journal:';

const NAME_RE = /^[A-Za-z0-9_@.:\\-]{1,256}$/;
const UNIT_SUFFIX_RE = /\.(?:service|socket|scope|slice|target|mount|swap|timer|path|device|automount)$/;
const CURSOR_RE = /^s=[0-9a-f]{32};i=[0-9a-f]{1,16};b=[0-9a-f]{32};m=[0-9a-f]{1,16};t=[0-9a-f]{1,16};x=[0-9a-f]{1,16}$/;

/** Whether a configured location names the journal rather than a file. */
export function isJournalLocation(location: string): boolean {
  return location.startsWith(JOURNAL_PREFIX);
}

/**
 * The journalctl match of a `journal:` location, or an error message:
 * - `journal:kernel`: the kernel's messages (`_TRANSPORT=kernel`; unlike `--dmesg`, not only
 *   the current boot, so a cursor from before a reboot still resumes);
 * - `journal:<name>.service` (or another unit suffix): `--unit=<name>.service`;
 * - `journal:<identifier>`: `--identifier=<identifier>` (SYSLOG_IDENTIFIER).
 */
export function journalMatch(location: string): { args: string[] } | { error: string } {
  if (!isJournalLocation(location)) return { error: `not a journal location (${JOURNAL_PREFIX}<unit or identifier>)` };
  const name = location.slice(JOURNAL_PREFIX.length);
  if (!NAME_RE.test(name) || name.startsWith('-')) return { error: `${JOURNAL_PREFIX} must be followed by a unit or syslog identifier (letters, digits, _@.:-\\)` };
  if (name === 'kernel') return { args: ['_TRANSPORT=kernel'] };
  return { args: [UNIT_SUFFIX_RE.test(name) ? `--unit=${name}` : `--identifier=${name}`] };
}

/** The full journalctl command line (exported for tests and the `status` of a source). */
export function journalctlArgs(location: string, options: JournalOptions, after: string | undefined, startAt: 'end' | 'beginning'): string[] {
  const match = journalMatch(location);
  if ('error' in match) throw new Error(`${location}: ${match.error}`);
  const args = ['journalctl', '--follow', '--output=json', '--all', '--no-pager', '--quiet'];
  if (options.journal_directory !== undefined) args.push(`--directory=${options.journal_directory}`);
  if (options.journal_file !== undefined) args.push(`--file=${options.journal_file}`);
  // With a cursor every entry after it; `--lines=0` would override the cursor and show none.
  if (after !== undefined) args.push(`--after-cursor=${after}`, '--lines=all');
  else args.push(startAt === 'beginning' ? '--lines=all' : '--lines=0');
  args.push(...match.args);
  return args;
}

/** The cursor file of one journal source in the state directory (one per location and journal). */
export function journalCursorPath(stateDir: string, location: string, options: JournalOptions): string {
  // node:crypto is loaded here, not with plugin-kit (as in atomic-file.ts).
  const id = process
    .getBuiltinModule('node:crypto')
    .createHash('sha256')
    .update(JSON.stringify([location, options.journal_directory ?? null, options.journal_file ?? null]))
    .digest('hex')
    .slice(0, 12);
  const readable = location.slice(JOURNAL_PREFIX.length).replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64);
  return join(stateDir, 'journal', `${readable}-${id}.cursor`);
}

/** The saved cursor, or undefined (none yet, or a file that holds no journal cursor). */
export function readJournalCursor(path: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return CURSOR_RE.test(text) ? text : undefined;
}

/** Replaces the cursor file in one rename: a reader sees the old cursor or the new one. */
function writeJournalCursor(path: string, cursor: string): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, `${cursor}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}

// `"__CURSOR":"` cannot occur inside a JSON string value (its quotes would be escaped).
const CURSOR_FIELD = '"__CURSOR":"';

function cursorOf(line: string): string | undefined {
  const at = line.indexOf(CURSOR_FIELD);
  if (at === -1) return undefined;
  const from = at + CURSOR_FIELD.length;
  const end = line.indexOf('"', from);
  return end === -1 ? undefined : line.slice(from, end);
}

export interface JournalSourceOptions {
  /** `journal:<unit or identifier>` or `journal:kernel`. */
  location: string;
  journal: JournalOptions;
  parser: LineParser;
  ctx: SourceContext;
  /** Without a saved cursor: only new entries (`end`) or everything the journal holds. */
  startAt: 'end' | 'beginning';
  /** The journalctl program (tests). */
  journalctl?: string;
}

/**
 * Follows the journal and emits what the parser finds; resumes after the saved cursor (when the
 * context gives a state directory). `done` resolves when the signal stops it (after every entry
 * journalctl printed was parsed) and rejects when journalctl ends by itself (the runtime
 * restarts the source with back-off).
 */
export function startJournalSource(o: JournalSourceOptions): RunningSource {
  const { ctx, parser } = o;
  const cursorPath = ctx.stateDir !== undefined ? journalCursorPath(ctx.stateDir, o.location, o.journal) : undefined;
  let saved: string | undefined;
  try {
    if (cursorPath !== undefined) {
      mkdirSync(join(cursorPath, '..'), { recursive: true, mode: 0o700 });
      saved = readJournalCursor(cursorPath);
    }
    const argv = journalctlArgs(o.location, o.journal, saved, o.startAt);
    if (o.journalctl !== undefined) argv[0] = o.journalctl;
    ctx.log.info({ location: o.location, resume: saved !== undefined, cursorFile: cursorPath }, 'reading the journal');
    return follow(argv, parser, ctx, (cursor) => {
      if (cursorPath === undefined || cursor === saved) return;
      writeJournalCursor(cursorPath, cursor);
      saved = cursor;
    });
  } catch (err) {
    return { done: Promise.reject(err instanceof Error ? err : new Error(String(err))) };
  }
}

function follow(argv: string[], parser: LineParser, ctx: SourceContext, save: (cursor: string) => void): RunningSource {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
  let pending = '';
  let failure: Error | undefined;
  // One batch per chunk of output: every entry of it parsed and emitted, then its last cursor saved.
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    const text = pending + chunk;
    const end = text.lastIndexOf('\n');
    if (end === -1) {
      pending = text;
      return;
    }
    pending = text.slice(end + 1);
    const lines = text.slice(0, end).split('\n');
    const readAt = Date.now() / 1000;
    let last: string | undefined;
    let count = 0;
    for (const line of lines) {
      if (line === '') continue;
      count++;
      for (const detection of parser.push(line, readAt)) ctx.emit(detection);
      last = cursorOf(line) ?? last;
    }
    ctx.linesRead?.(count);
    if (last === undefined || failure !== undefined) return;
    try {
      save(last);
    } catch (err) {
      // Not resumable: stop rather than read on and re-read it all after the next restart.
      failure = err instanceof Error ? err : new Error(String(err));
      child.kill('SIGTERM');
    }
  });
  const stop = () => child.kill('SIGTERM');
  ctx.signal.addEventListener('abort', stop, { once: true });
  const done = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      ctx.signal.removeEventListener('abort', stop);
      for (const detection of parser.flush(Date.now() / 1000)) ctx.emit(detection);
      if (failure !== undefined) reject(new Error(`journal cursor not saved: ${failure.message}`));
      else if (ctx.signal.aborted) resolve();
      else reject(new Error(`${argv[0]} ended (${signal ?? `exit ${code}`}): ${stderr.trim()}`));
    });
  });
  return { done };
}
