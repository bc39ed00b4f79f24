import { z } from 'zod';
import type { IdsLabel } from '@rampart/contracts';
import type { PluginLogger } from './logger.ts';
import type { OffsetStore } from './offset-store.ts';
import { PolicyOptions } from './policy.ts';
import type { Detection, DetectionMode } from './detection.ts';

export type { Detection, DetectionMode } from './detection.ts';

/**
 * A line parser: pure, synchronous, no I/O. It may keep per-instance state (e.g. a port-scan
 * window or a multi-line session), which is why `createParser` makes a fresh one per stream.
 */
export interface LineParser {
  /** Parses one line (without its newline); returns the detections it completes, often none. */
  push(line: string, readAt: number): Detection[];
  /** End of input: returns what was pending (e.g. scan windows still open). */
  flush(now: number): Detection[];
  /** Counters for the `parse` summary, e.g. lines of the source's programs, skipped host names. */
  stats?(): Record<string, number>;
}

export interface SourceContext {
  log: PluginLogger;
  /** Called by the running source for every detection; the runtime owns queues and reporting. */
  emit(detection: Detection): void;
  signal: AbortSignal;
  /**
   * Where file sources persist how far they have read (the agent backs it with a state file,
   * `fileOffsetStore`); without it a restart starts at the end of each file.
   */
  offsets?: OffsetStore;
  /**
   * The agent's state directory, where a source may keep small files of its own (the journal
   * sources' cursors); without it a source keeps nothing across restarts.
   */
  stateDir?: string;
  /** Optional: told how many lines the source read (the agent's `lines_read` metric). */
  linesRead?(count: number): void;
}

/** A running source. It only reads and emits; the runtime restarts it with back-off when it fails. */
export interface RunningSource {
  /** Resolves when the source stops (signal aborted) and rejects when it fails. */
  done: Promise<void>;
}

export interface SourceDefinition<C = unknown> {
  /** Folder name of the plugin, e.g. `sshd`. */
  name: string;
  /** The `ids` label this source serves. */
  serves: IdsLabel;
  /** Validates the `ids.<label>` entry (plus the plugin's local options); no I/O. */
  configSchema: z.ZodType<C>;
  createParser(config: C, mode: DetectionMode): LineParser;
  /**
   * The `ids.<label>` entry `rampart-agent parse` uses when given none (a file source's path
   * does not matter there). Omitted when the source has no line parser worth running alone.
   */
  parseDefaults?: unknown;
  /** Starts reading (usually tailing the configured file) and emitting. */
  start(config: C, mode: DetectionMode, ctx: SourceContext): RunningSource;
}

export function defineSource<C>(definition: SourceDefinition<C>): SourceDefinition<C> {
  return definition;
}

/**
 * Local options every source accepts under `options` in its `ids.<label>` entry (the server's
 * settings document carries only the specification's fields, so all of these have defaults):
 * the detection mode, where to start in a file never read before, and the report policy.
 */
export const SourceOptionsBase = PolicyOptions.extend({
  mode: z.enum(['normal', 'aggressive']).default('normal'),
  start_at: z.enum(['end', 'beginning']).default('end'),
});
export type SourceOptionsBase = z.infer<typeof SourceOptionsBase>;

/** The policy part of a source's options, for `new FailPolicy(...)`. */
export function policyOptionsOf(options: SourceOptionsBase): PolicyOptions {
  const { max_retry, find_time_seconds, severity, default_severity, weight, max_tracked } = options;
  return { max_retry, find_time_seconds, severity, default_severity, weight, max_tracked };
}
