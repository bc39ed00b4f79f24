import { IdsEntries } from '@rampart/contracts';
import { defineSource, SourceOptionsBase, startTailedSource } from '@rampart/plugin-kit';
import { z } from 'zod';
import { JsonEventParser } from './parser.ts';
import { JsonStream } from './stream.ts';

export { JsonEventParser, eventTime } from './parser.ts';
export { JsonStream, field } from './stream.ts';

export const JsonSourceConfig = IdsEntries.json_source.extend({
  json: z.array(JsonStream).min(1, 'at least one stream ({"path": …}) is required').max(32),
  options: SourceOptionsBase.prefault({}),
});
export type JsonSourceConfig = z.infer<typeof JsonSourceConfig>;

/**
 * `json_source`: newline-delimited JSON events (application logs, IDS alerts, other tools'
 * exports), each stream with its own address, time and kind fields. Both modes read the same:
 * what counts as an attack is said by `when`.
 */
export const jsonSource = defineSource<JsonSourceConfig>({
  name: 'json',
  serves: 'json_source',
  configSchema: JsonSourceConfig,
  parseDefaults: { active: true, json: [{ path: '-' }] },
  // `parse` reads one input: the first stream says how to read it.
  createParser: (config) => new JsonEventParser(config.json[0]!),
  start(config, _mode, ctx) {
    const running = config.json.map((stream) => startTailedSource(stream.path, new JsonEventParser(stream), ctx, config.options.start_at));
    return { done: Promise.all(running.map((r) => r.done)).then(() => undefined) };
  },
});
