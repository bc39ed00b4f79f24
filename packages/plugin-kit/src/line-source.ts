import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { DetectionMode, LineParser, RunningSource, SourceContext } from './source.ts';
import { tailFile } from './tail.ts';

/**
 * The usual `start` of a file source: tail `path` (rotation-safe, resumable through
 * `ctx.offsets`) and emit what the parser finds. Lines are parsed in file order by one parser
 * instance, so multi-line state (sshd connections, scan windows) holds across batches.
 */
export function startTailedSource(path: string, parser: LineParser, ctx: SourceContext, startAt: 'end' | 'beginning' = 'end'): RunningSource {
  const tail = tailFile({
    path,
    signal: ctx.signal,
    log: ctx.log,
    startAt,
    ...(ctx.offsets ? { offsets: ctx.offsets } : {}),
    onLines(lines, readAt) {
      ctx.linesRead?.(lines.length);
      for (const line of lines) for (const detection of parser.push(line, readAt)) ctx.emit(detection);
    },
  });
  return {
    done: tail.done.then(() => {
      for (const detection of parser.flush(Date.now() / 1000)) ctx.emit(detection);
    }),
  };
}

/** Parses a whole text (the `parse` command, tests): every detection in order, then the flush. */
export function parseLines(parser: LineParser, lines: Iterable<string>, readAt: number): ReturnType<LineParser['push']> {
  const out: ReturnType<LineParser['push']> = [];
  for (const line of lines) for (const d of parser.push(line, readAt)) out.push(d);
  out.push(...parser.flush(readAt));
  return out;
}

export type { DetectionMode };

/**
 * Runs a reader command (e.g. `journalctl --dmesg --follow --output=json --lines=0`) and parses
 * its standard output line by line. `done` resolves when the signal stops it and rejects when
 * the command ends by itself (the runtime restarts the source with back-off).
 */
export function startCommandSource(argv: readonly string[], parser: LineParser, ctx: SourceContext): RunningSource {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
  const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
  lines.on('line', (line) => {
    ctx.linesRead?.(1);
    for (const detection of parser.push(line, Date.now() / 1000)) ctx.emit(detection);
  });
  const stop = () => child.kill('SIGTERM');
  ctx.signal.addEventListener('abort', stop, { once: true });
  const done = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      ctx.signal.removeEventListener('abort', stop);
      for (const detection of parser.flush(Date.now() / 1000)) ctx.emit(detection);
      if (ctx.signal.aborted) resolve();
      else reject(new Error(`${argv[0]} ended (${signal ?? `exit ${code}`}): ${stderr.trim()}`));
    });
  });
  return { done };
}
