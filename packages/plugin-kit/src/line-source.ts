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
