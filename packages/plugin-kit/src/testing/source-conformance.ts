import { waitFor } from './until.ts';
import { appendFile, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalIp } from '../ip.ts';
import { memoryOffsetStore } from '../offset-store.ts';
import type { Detection, DetectionMode, SourceDefinition } from '../source.ts';
import { silentLogger as silent } from './loggers.ts';

export interface FileSourceCase {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each definition has its own config type
  definition: SourceDefinition<any>;
  /** The `ids` entry that makes the source read `file` (a temporary file the suite writes). */
  config(file: string): unknown;
  mode?: DetectionMode;
  /** Self-contained log lines (no state from earlier lines needed) that yield detections. */
  lines: string[];
  /** `<ip> <kind>` of what `lines` yield, in order. */
  expected: string[];
}



/**
 * The contract every file source keeps (conventions §12): its config and parse defaults
 * validate; its parser is deterministic and emits well-formed detections for its own label;
 * `start` tails the configured file and emits what the parser finds, skips the file's history,
 * and after a restart with the same offsets reads only the lines written since.
 */
export function sourceConformance(c: FileSourceCase): void {
  const { definition } = c;
  const mode = c.mode ?? 'normal';
  describe(`${definition.name} (${definition.serves}) source conformance`, () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), `rampart-conformance-${definition.name}-`));
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));

    it('validates its parse defaults and a config for a file', () => {
      if (definition.parseDefaults !== undefined) expect(definition.configSchema.safeParse(definition.parseDefaults).success).toBe(true);
      expect(definition.configSchema.safeParse(c.config(join(dir, 'x.log'))).error?.issues ?? []).toEqual([]);
    });

    it('parses deterministically into well-formed detections of its label', () => {
      const config = definition.configSchema.parse(c.config(join(dir, 'x.log')));
      const run = () => {
        const parser = definition.createParser(config, mode);
        const out: Detection[] = c.lines.flatMap((line) => parser.push(line, 1_750_000_000));
        return [...out, ...parser.flush(1_750_000_000)];
      };
      const first = run();
      expect(run()).toEqual(first);
      expect(first.map((d) => `${d.ip} ${d.kind}`)).toEqual(c.expected);
      for (const d of first) {
        expect(Object.keys(d)).toEqual(['ts', 'ip', 'source', 'kind', 'attempts']);
        expect(Number.isFinite(d.ts)).toBe(true);
        expect(canonicalIp(d.ip)).toBe(d.ip);
        expect(d.source).toBe(definition.serves);
        expect(Number.isSafeInteger(d.attempts) && d.attempts >= 1).toBe(true);
      }
    });

    it('tails its file: no history, the parser’s detections, and only new lines after a restart', async () => {
      const file = join(dir, 'tailed.log');
      await writeFile(file, c.lines.join('\n') + '\n'); // history: never reported
      const config = definition.configSchema.parse(c.config(file));
      const offsets = memoryOffsetStore();
      const runOnce = async () => {
        const seen: Detection[] = [];
        const stop = new AbortController();
        const running = definition.start(config, mode, { log: silent, emit: (d) => seen.push(d), signal: stop.signal, offsets });
        // The first position is saved once the tailer knows where it starts.
        await waitFor(async () => (await offsets.load(file)) !== undefined, 'the start position');
        await appendFile(file, c.lines.join('\n') + '\n');
        const size = (await stat(file)).size;
        await waitFor(async () => (await offsets.load(file))?.offset === size, 'the whole file read');
        stop.abort();
        await running.done;
        return seen.map((d) => `${d.ip} ${d.kind}`);
      };
      expect(await runOnce()).toEqual(c.expected);
      expect(await runOnce()).toEqual(c.expected);
    });
  });
}
