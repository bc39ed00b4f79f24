import { closeSync, openSync, readSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import { FailPolicy, SourceOptionsBase, policyOptionsOf } from '@rampart/plugin-kit';
import type { Detection, DetectionMode, LineParser, ReportCandidate, SourceDefinition } from '@rampart/plugin-kit';
import { SOURCES, UnknownPluginError, findSource } from '../sources.ts';
import { NeverBlock } from '../sync/never-block.ts';
import { Output } from './parse-output.ts';
import { parseIpv4 } from '@rampart/contracts';

export interface ParseOptions {
  /** The `ids` label of the source, e.g. `ssh_log`. */
  source: string;
  mode?: DetectionMode;
  /** A file path, or `-` for standard input. */
  file: string;
  /** An `ids.<label>` entry (JSON text) to use instead of the source's parse defaults. */
  config?: string;
  /**
   * Print the reports the agent would send after the source's policy (`max_retry`,
   * `find_time_seconds`, weights, confidence) instead of the detections.
   */
  reports?: boolean;
}

export interface ParseIo {
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
}

const READ_CHUNK = 256 * 1024;

/**
 * A file's bytes in chunks of one reused buffer, read synchronously: `parse` has nothing else to
 * do meanwhile, and a stream would allocate a buffer and settle promises for every chunk. Each
 * chunk is used up (its lines decoded, its tail copied) before the next is read.
 */
function* fileChunks(fd: number): Generator<Buffer> {
  const buf = Buffer.allocUnsafe(READ_CHUNK);
  try {
    for (let n = readSync(fd, buf, 0, READ_CHUNK, null); n > 0; n = readSync(fd, buf, 0, READ_CHUNK, null)) yield buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** Exit codes: 0 done, 2 usage or configuration error, 1 input could not be read. */
export type ParseExit = 0 | 1 | 2;

/**
 * `rampart-agent parse`: runs one source's line parser over a file or stdin, prints one JSON
 * line per detection (`{ts, ip, source, kind, attempts}`), or with `reports` one per report the
 * policy completes (`{ip, ts, confidence, notes}`), and a summary on stderr.
 */
/** The input and the time its year-less syslog dates are placed against (the file's last write). */
async function openInput(file: string, io: ParseIo): Promise<{ input: AsyncIterable<unknown> | Iterable<Buffer>; readAt: number } | undefined> {
  try {
    if (file === '-') return { input: io.stdin, readAt: Date.now() / 1000 };
    const readAt = (await stat(file)).mtimeMs / 1000;
    return { input: fileChunks(openSync(file, 'r')), readAt };
  } catch (err) {
    io.stderr.write(`parse: cannot read ${file}: ${(err as Error).message}\n`);
    return undefined;
  }
}

export async function parseCommand(
  options: ParseOptions,
  io: ParseIo,
  sources: ReadonlyMap<string, SourceDefinition<unknown>> = SOURCES,
): Promise<ParseExit> {
  const prepared = prepare(options, io, sources);
  if (!prepared) return 2;
  const { parser } = prepared;
  const reporter = options.reports ? new OfflineReporter(prepared.policy) : undefined;

  const opened = await openInput(options.file, io);
  if (!opened) return 1;
  const { input, readAt } = opened;

  const started = performance.now();
  const summary = new Summary();
  const out = new Output(io.stdout);
  const take = (detections: Detection[]) => {
    for (let i = 0; i < detections.length; i++) {
      const d = detections[i]!;
      if (!reporter) {
        // The detection lines are the source's reference filter's (fail2ban's) and no more.
        if (d.policyOnly) continue;
        summary.add(d);
        out.detection(d);
        continue;
      }
      summary.add(d);
      const r = reporter.push(d);
      if (r) out.line(`${JSON.stringify({ ip: r.ip, ts: r.ts, confidence: r.confidence, notes: r.notes })}\n`);
    }
  };

  // Lines are decoded one by one from the bytes: each string stands alone, so what a parser keeps
  // (addresses of open connections) never pins a whole read buffer in memory.
  let rest: Buffer = Buffer.alloc(0);
  const line = (buf: Buffer, start: number, end: number) => {
    if (end > start && buf[end - 1] === 13) end--;
    summary.lines++;
    take(parser.push(buf.toString('utf8', start, end), readAt));
  };
  try {
    for await (const chunk of input) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
      let nl = bytes.indexOf(10);
      if (nl === -1) {
        rest = Buffer.concat([rest, bytes]);
        continue;
      }
      if (rest.length > 0) {
        const first = Buffer.concat([rest, bytes.subarray(0, nl)]);
        line(first, 0, first.length);
      } else line(bytes, 0, nl);
      let start = nl + 1;
      nl = bytes.indexOf(10, start);
      while (nl !== -1) {
        line(bytes, start, nl);
        start = nl + 1;
        nl = bytes.indexOf(10, start);
      }
      rest = Buffer.from(bytes.subarray(start));
      await out.flush(false);
    }
  } catch (err) {
    io.stderr.write(`parse: cannot read ${options.file}: ${(err as Error).message}\n`);
    return 1;
  }
  if (rest.length > 0) line(rest, 0, rest.length);
  take(parser.flush(readAt));
  await out.flush(true);
  io.stderr.write(summary.text(options, (performance.now() - started) / 1000, parser.stats?.()));
  if (reporter) io.stderr.write(reporter.text());
  return 0;
}

interface Prepared {
  parser: LineParser;
  policy: FailPolicy;
}

function prepare(options: ParseOptions, io: ParseIo, sources: ReadonlyMap<string, SourceDefinition<unknown>>): Prepared | undefined {
  let definition: SourceDefinition<unknown>;
  try {
    definition = findSource(options.source, sources);
  } catch (err) {
    if (!(err instanceof UnknownPluginError)) throw err;
    io.stderr.write(`parse: ${err.message}\n`);
    return undefined;
  }
  const mode = options.mode ?? 'normal';
  if (mode !== 'normal' && mode !== 'aggressive') {
    io.stderr.write(`parse: --mode must be normal or aggressive, not '${String(mode)}'\n`);
    return undefined;
  }
  let entry: unknown = definition.parseDefaults ?? { active: true };
  if (options.config !== undefined) {
    try {
      entry = JSON.parse(options.config);
    } catch (err) {
      io.stderr.write(`parse: --config is not JSON: ${(err as Error).message}\n`);
      return undefined;
    }
  }
  const parsed = definition.configSchema.safeParse(entry);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) io.stderr.write(`parse: ids.${options.source}.${issue.path.join('.')}: ${issue.message}\n`);
    return undefined;
  }
  // As the agent does (agent.ts applySources): the plugin's options extend the base ones.
  const base = SourceOptionsBase.strip().safeParse((parsed.data as { options?: unknown }).options ?? {});
  const policy = new FailPolicy(base.success ? policyOptionsOf(base.data) : {});
  return { parser: definition.createParser(parsed.data, mode), policy };
}

/**
 * The agent's detection pipeline without the spool or the organization: drops what `POST /ips`
 * never takes (IPv6, special-purpose IPv4 ranges; the host's own addresses, the organization's
 * reserved IPs and the allow-list are not known offline) and counts the rest through the policy.
 */
class OfflineReporter {
  private readonly neverBlock = new NeverBlock({ ownAddresses: [], controlPlane: [], reservedIps: [], allowList: [] });
  private readonly dropped = new Map<string, number>();
  private readonly addresses = new Set<string>();
  private reports = 0;
  private pruneAt = 0;

  constructor(private readonly policy: FailPolicy) {}

  push(d: Detection): ReportCandidate | undefined {
    const reason = !parseIpv4(d.ip) ? (d.ip.includes(':') ? 'ipv6' : 'invalid') : this.neverBlock.protects(d.ip);
    if (reason) {
      this.dropped.set(reason, (this.dropped.get(reason) ?? 0) + 1);
      return undefined;
    }
    const report = this.policy.push(d);
    if (d.ts > this.pruneAt) {
      this.policy.prune(d.ts);
      this.pruneAt = d.ts + 60;
    }
    if (!report) return undefined;
    this.reports++;
    this.addresses.add(report.ip);
    return report;
  }

  text(): string {
    const dropped = [...this.dropped].map(([k, n]) => `${k} ${n}`).join(', ');
    return `parse: ${this.reports} reports, ${this.addresses.size} addresses${dropped ? ` (detections not reportable: ${dropped})` : ''}\n`;
  }
}

class Summary {
  lines = 0;
  detections = 0;
  attempts = 0;
  readonly addresses = new Set<string>();
  readonly kinds = new Map<string, number>();

  add(d: Detection): void {
    this.detections++;
    this.attempts += d.attempts;
    this.addresses.add(d.ip);
    this.kinds.set(d.kind, (this.kinds.get(d.kind) ?? 0) + 1);
  }

  text(options: ParseOptions, seconds: number, stats: Record<string, number> | undefined): string {
    const rate = seconds > 0 ? Math.round(this.lines / seconds) : this.lines;
    const kinds = [...this.kinds].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ');
    const extra = stats ? ` [${Object.entries(stats).map(([k, v]) => `${k} ${v}`).join(', ')}]` : '';
    return (
      `parse: ${options.source} (${options.mode ?? 'normal'}) read ${this.lines} lines in ${seconds.toFixed(2)} s (${rate} lines/s): ` +
      `${this.detections} detections, ${this.attempts} attempts, ${this.addresses.size} addresses${kinds ? ` (${kinds})` : ''}${extra}\n`
    );
  }
}
