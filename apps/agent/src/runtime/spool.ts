import { closeSync, fdatasyncSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';

/** What the agent sends as a report; `id` doubles as the Idempotency-Key of every attempt. */
export interface SpooledReport {
  seq: number;
  id: string;
  /** Epoch ms when it was spooled. */
  at: number;
  body: { ip: string; confidence: number; source: string; notes?: string };
  /**
   * What made this report (source, address, time of the completing line). A source that re-reads
   * lines after a crash (its offset is saved just after they were read) makes the same key again,
   * and the spool refuses the copy.
   */
  key?: string;
}

/** Acknowledged reports kept in the log for their keys: far more than one read batch of a source. */
const RECENT_KEPT = 10_000;

export interface SpoolOptions {
  dir: string;
  /** Pending reports beyond this are refused (counted), so a dead server cannot fill the disk. */
  maxPending?: number;
  /** Log bytes after which an ack compacts the log. */
  compactBytes?: number;
}

export class SpoolFullError extends Error {
  constructor(readonly maxPending: number) {
    super(`spool holds ${maxPending} unsent reports; refusing more`);
    this.name = 'SpoolFullError';
  }
}

function syncDirSync(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** temp file, fsync, rename, directory fsync: a crash leaves the old or the new content. */
function replaceFileSync(path: string, dir: string, data: string): void {
  const tmp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeFileSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  syncDirSync(dir);
}

/**
 * The report spool: an append-only JSON-lines log (each append fsynced before it returns, so a
 * report exists on disk before it is sent) and an `acked` file holding the highest sequence
 * number the server acknowledged (replaced atomically). Reports are sent strictly in sequence
 * order, so "acked = n" means every report up to n is done. After a crash the pending reports
 * are those above `acked`, in order; a torn last line (a crash mid-append) is dropped because
 * its append never returned, so nobody counted on it.
 *
 * File operations are synchronous on purpose: a source's lines are appended here before its
 * tailer records how far it read (the tailer saves its offset after `onLines` returns), so a
 * crash can never leave a line counted as read whose report is not on disk. Reports are rare
 * (one per attacker per policy window), so the blocking fsync costs little.
 */
export class Spool {
  private pending: SpooledReport[] = [];
  private recent: SpooledReport[] = [];
  private readonly keys = new Set<string>();
  private nextSeq = 1;
  private acked = 0;
  private fd = -1;
  private logBytes = 0;
  private compactAt = 0;
  private readonly logPath: string;
  private readonly ackPath: string;
  private readonly maxPending: number;
  private readonly compactBytes: number;

  private constructor(private readonly options: SpoolOptions) {
    this.logPath = join(options.dir, 'reports.log');
    this.ackPath = join(options.dir, 'acked');
    this.maxPending = options.maxPending ?? 1_000_000;
    this.compactBytes = options.compactBytes ?? 4 * 1024 * 1024;
  }

  static async open(options: SpoolOptions): Promise<Spool> {
    const spool = new Spool(options);
    spool.load();
    return spool;
  }

  get depth(): number {
    return this.pending.length;
  }

  /** Oldest unacknowledged reports, in order. */
  peek(limit = 1): SpooledReport[] {
    return this.pending.slice(0, limit);
  }

  /** Durably appends a report (on disk when this returns); undefined when `key` was spooled before. */
  appendSync(body: SpooledReport['body'], key?: string): SpooledReport | undefined {
    if (key !== undefined && this.keys.has(key)) return undefined;
    if (this.pending.length >= this.maxPending) throw new SpoolFullError(this.maxPending);
    const report: SpooledReport = { seq: this.nextSeq, id: randomUUID(), at: Date.now(), body, ...(key !== undefined ? { key } : {}) };
    const line = `${JSON.stringify(report)}\n`;
    writeSync(this.fd, line);
    fdatasyncSync(this.fd);
    this.nextSeq += 1;
    this.logBytes += Buffer.byteLength(line);
    this.pending.push(report);
    if (key !== undefined) this.keys.add(key);
    return report;
  }

  async append(body: SpooledReport['body']): Promise<SpooledReport> {
    return this.appendSync(body)!;
  }

  /** Marks every report up to `seq` as acknowledged by the server. */
  async ack(seq: number): Promise<void> {
    if (seq <= this.acked) return;
    replaceFileSync(this.ackPath, this.options.dir, String(seq));
    this.acked = seq;
    while (this.pending.length > 0 && this.pending[0]!.seq <= seq) this.remember(this.pending.shift()!);
    if (this.logBytes > this.compactAt) this.compact();
  }

  async close(): Promise<void> {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  private load(): void {
    mkdirSync(this.options.dir, { recursive: true, mode: 0o700 });
    this.acked = readAcked(this.ackPath);
    let text = '';
    try {
      text = readFileSync(this.logPath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const reports: SpooledReport[] = [];
    let maxSeq = this.acked;
    for (const line of text.split('\n')) {
      if (!line) continue;
      let report: SpooledReport;
      try {
        report = JSON.parse(line) as SpooledReport;
      } catch {
        continue; // torn tail of an append that never completed
      }
      maxSeq = Math.max(maxSeq, report.seq);
      if (report.seq > this.acked) reports.push(report);
      else this.remember(report);
      if (report.key !== undefined) this.keys.add(report.key);
    }
    reports.sort((a, b) => a.seq - b.seq);
    this.pending = reports;
    this.nextSeq = maxSeq + 1;
    // Rewrite without the acked lines and any torn tail, then append from there.
    this.rewrite();
  }

  /** Keeps an acknowledged report's key, forgetting the oldest beyond RECENT_KEPT. */
  private remember(report: SpooledReport): void {
    if (report.key === undefined) return;
    this.recent.push(report);
    if (this.recent.length > RECENT_KEPT * 2) {
      for (const old of this.recent.splice(0, this.recent.length - RECENT_KEPT)) if (old.key !== undefined) this.keys.delete(old.key);
    }
  }

  /** Replaces the log by the recent acknowledged part and the pending part (atomic rename). */
  private compact(): void {
    this.rewrite();
  }

  private rewrite(): void {
    const kept = [...this.recent.slice(-RECENT_KEPT), ...this.pending];
    const text = kept.map((r) => `${JSON.stringify(r)}\n`).join('');
    if (this.fd >= 0) closeSync(this.fd);
    replaceFileSync(this.logPath, this.options.dir, text);
    this.fd = openSync(this.logPath, 'a', 0o600);
    this.logBytes = Buffer.byteLength(text);
    // The kept part alone may be large (long notes): never compact again before it doubles.
    this.compactAt = Math.max(this.compactBytes, this.logBytes * 2);
  }
}

function readAcked(path: string): number {
  try {
    const value = Number(readFileSync(path, 'utf8').trim());
    return Number.isSafeInteger(value) && value >= 0 ? value : 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}
