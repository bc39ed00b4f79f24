import { mkdir, open, readFile, stat, type FileHandle } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { syncDir, writeDurable } from './durable-file.ts';

/** What the agent sends as a report; `id` doubles as the Idempotency-Key of every attempt. */
export interface SpooledReport {
  seq: number;
  id: string;
  /** Epoch ms when it was spooled. */
  at: number;
  body: { ip: string; confidence: number; source: string; notes?: string };
}

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

/**
 * The report spool: an append-only JSON-lines log (each append fsynced before it returns, so a
 * report exists on disk before it is sent) and an `acked` file holding the highest sequence
 * number the server acknowledged (replaced atomically). Reports are sent strictly in sequence
 * order, so "acked = n" means every report up to n is done. After a crash the pending reports
 * are those above `acked`, in order; a torn last line (a crash mid-append) is dropped because
 * its append never returned, so nobody counted on it.
 */
export class Spool {
  private pending: SpooledReport[] = [];
  private nextSeq = 1;
  private acked = 0;
  private log!: FileHandle;
  private logBytes = 0;
  private readonly logPath: string;
  private readonly ackPath: string;
  private readonly maxPending: number;
  private readonly compactBytes: number;
  private chain: Promise<unknown> = Promise.resolve();

  private constructor(private readonly options: SpoolOptions) {
    this.logPath = join(options.dir, 'reports.log');
    this.ackPath = join(options.dir, 'acked');
    this.maxPending = options.maxPending ?? 1_000_000;
    this.compactBytes = options.compactBytes ?? 4 * 1024 * 1024;
  }

  static async open(options: SpoolOptions): Promise<Spool> {
    const spool = new Spool(options);
    await spool.load();
    return spool;
  }

  get depth(): number {
    return this.pending.length;
  }

  /** Oldest unacknowledged reports, in order. */
  peek(limit = 1): SpooledReport[] {
    return this.pending.slice(0, limit);
  }

  /** Durably appends a report; resolves once it is on disk. */
  append(body: SpooledReport['body']): Promise<SpooledReport> {
    return this.serialize(async () => {
      if (this.pending.length >= this.maxPending) throw new SpoolFullError(this.maxPending);
      const report: SpooledReport = { seq: this.nextSeq, id: randomUUID(), at: Date.now(), body };
      const line = `${JSON.stringify(report)}\n`;
      await this.log.write(line);
      await this.log.datasync();
      this.nextSeq += 1;
      this.logBytes += Buffer.byteLength(line);
      this.pending.push(report);
      return report;
    });
  }

  /** Marks every report up to `seq` as acknowledged by the server. */
  ack(seq: number): Promise<void> {
    return this.serialize(async () => {
      if (seq <= this.acked) return;
      await writeDurable(this.ackPath, String(seq));
      this.acked = seq;
      while (this.pending.length > 0 && this.pending[0]!.seq <= seq) this.pending.shift();
      if (this.logBytes > this.compactBytes) await this.compact();
    });
  }

  async close(): Promise<void> {
    await this.serialize(async () => {
      await this.log.close();
    });
  }

  private serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task, task);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async load(): Promise<void> {
    await mkdir(this.options.dir, { recursive: true, mode: 0o700 });
    this.acked = await readAcked(this.ackPath);
    let text = '';
    try {
      text = await readFile(this.logPath, 'utf8');
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
    }
    reports.sort((a, b) => a.seq - b.seq);
    this.pending = reports;
    this.nextSeq = maxSeq + 1;
    // Rewrite without the acked lines and any torn tail, then append from there.
    await writeDurable(this.logPath, reports.map((r) => `${JSON.stringify(r)}\n`).join(''));
    this.log = await open(this.logPath, 'a', 0o600);
    this.logBytes = (await stat(this.logPath)).size;
  }

  /** Replaces the log by its pending part (atomic rename), so it does not grow forever. */
  private async compact(): Promise<void> {
    const text = this.pending.map((r) => `${JSON.stringify(r)}\n`).join('');
    await this.log.close();
    await writeDurable(this.logPath, text);
    this.log = await open(this.logPath, 'a', 0o600);
    this.logBytes = Buffer.byteLength(text);
    await syncDir(this.options.dir);
  }
}

async function readAcked(path: string): Promise<number> {
  try {
    const value = Number((await readFile(path, 'utf8')).trim());
    return Number.isSafeInteger(value) && value >= 0 ? value : 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}
