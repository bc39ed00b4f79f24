import type { PluginLogger } from '../logger.ts';

/** A logger that drops everything, for tests that do not read the log. */
export const silentLogger: PluginLogger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silentLogger };

/** One line a `recordingLogger` kept: its level, the object logged (`{}` for a bare message) and the message. */
export interface LogLine {
  level: string;
  data: Record<string, unknown>;
  msg: string;
}

/** A logger that keeps every line (its children write to the same list), for asserting what was announced. */
export function recordingLogger(lines: LogLine[] = []): PluginLogger & { lines: LogLine[] } {
  const at =
    (level: string) =>
    (a: object | string, b?: string): void => {
      lines.push(typeof a === 'string' ? { level, data: {}, msg: a } : { level, data: a as Record<string, unknown>, msg: b ?? '' });
    };
  const log: PluginLogger & { lines: LogLine[] } = { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return log;
}
