import { execFileSync, spawn } from 'node:child_process';
import { EnvelopeParser } from '../envelope.ts';
import { journalCursorPath, journalMatch, readJournalCursor, type JournalOptions } from '../journal.ts';

/*
 * Real journal files for tests: systemd-journal-remote turns journal export format (the format
 * `journalctl -o export` writes) into a journal file that journalctl reads with --file or
 * --directory, the same code path as the system journal. Writing to an existing file appends.
 */

export const JOURNAL_REMOTE = '/lib/systemd/systemd-journal-remote';

/** One journal entry: field name → value (text without newlines). */
export type JournalEntry = Record<string, string>;

/** Export format of entries (one `KEY=value` line per field, a blank line after each entry). */
export function journalExport(entries: Iterable<JournalEntry>): string {
  const out: string[] = [];
  for (const entry of entries) {
    for (const [key, value] of Object.entries(entry)) {
      if (value.includes('\n')) throw new Error(`journal field ${key}: multi-line values need the binary export form`);
      out.push(`${key}=${value}\n`);
    }
    out.push('\n');
  }
  return out.join('');
}

/** Writes (or appends) entries to the journal file `output` through systemd-journal-remote. */
export async function writeJournal(output: string, entries: Iterable<JournalEntry>): Promise<void> {
  const child = spawn(JOURNAL_REMOTE, [`--output=${output}`, '--compress=no', '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  child.stdin.end(journalExport(entries));
  const code = await closed;
  if (code !== 0) throw new Error(`systemd-journal-remote exited ${code}: ${stderr.trim()}`);
}

/**
 * The entries journald would have stored for syslog lines: the envelope's time, host, program
 * and pid become `__REALTIME_TIMESTAMP`, `_HOSTNAME`, `SYSLOG_IDENTIFIER`/`_COMM` and `_PID`,
 * the rest `MESSAGE`; `fields(program)` adds per-program fields (e.g. `_SYSTEMD_UNIT`, or
 * `_TRANSPORT=kernel`). Lines without an envelope are skipped. `readAt` anchors year-less
 * timestamps as the line parsers anchor them, so both read the same instant.
 */
export function syslogToJournal(lines: Iterable<string>, readAt: number, fields: (program: string) => JournalEntry = () => ({})): JournalEntry[] {
  const envelopes = new EnvelopeParser();
  const bootId = '5f1c0de0' + '0'.repeat(24);
  const out: JournalEntry[] = [];
  let seq = 0;
  for (const line of lines) {
    const e = envelopes.parse(line, readAt);
    if (!e) continue;
    seq++;
    out.push({
      __REALTIME_TIMESTAMP: String(Math.round(e.ts * 1_000_000)),
      __MONOTONIC_TIMESTAMP: String(seq),
      _BOOT_ID: bootId,
      _HOSTNAME: e.host,
      SYSLOG_IDENTIFIER: e.program,
      _COMM: e.program,
      ...(e.pid !== '' ? { _PID: e.pid } : {}),
      _TRANSPORT: 'syslog',
      PRIORITY: '6',
      ...fields(e.program),
      MESSAGE: e.message,
    });
  }
  return out;
}

/**
 * Whether a journal source has read everything its location matches: the cursor it saved in
 * `stateDir` is the cursor of the last matching entry (it saves a batch's last cursor after
 * emitting the batch). Tests wait on this, not on a pause, to know no further entry is coming.
 */
export function journalReadToEnd(stateDir: string, location: string, options: JournalOptions): boolean {
  const match = journalMatch(location);
  if ('error' in match) throw new Error(`${location}: ${match.error}`);
  const args = ['--output=json', '--all', '--no-pager', '--quiet', '--lines=1', ...match.args];
  if (options.journal_directory !== undefined) args.push(`--directory=${options.journal_directory}`);
  if (options.journal_file !== undefined) args.push(`--file=${options.journal_file}`);
  const last = execFileSync('journalctl', args).toString().trim().split('\n').at(-1);
  if (!last) return false;
  return readJournalCursor(journalCursorPath(stateDir, location, options)) === (JSON.parse(last) as { __CURSOR: string }).__CURSOR;
}
