/*
 * Runs one source in a process of its own, as the agent's supervisor does, so that a test can
 * kill it with SIGKILL mid-way: `node --import tsx source-runner.ts '<json>'` with
 * { module, exportName, config, mode, stateDir, out }. Each detection is appended to `out` as a
 * JSON line before the source goes on (synchronously, as the agent spools a report).
 */
import { appendFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { PluginLogger, SourceDefinition } from '../index.ts';

interface RunnerArgs {
  module: string;
  exportName: string;
  config: unknown;
  mode: 'normal' | 'aggressive';
  stateDir: string;
  out: string;
}

const args = JSON.parse(process.argv[2]!) as RunnerArgs;
const logger: PluginLogger = {
  debug() {},
  info: (o: unknown, msg?: string) => process.stderr.write(`${msg ?? ''} ${JSON.stringify(o)}\n`),
  warn: (o: unknown, msg?: string) => process.stderr.write(`WARN ${msg ?? ''} ${JSON.stringify(o)}\n`),
  error: (o: unknown, msg?: string) => process.stderr.write(`ERROR ${msg ?? ''} ${JSON.stringify(o)}\n`),
  child: () => logger,
};
const mod = (await import(pathToFileURL(args.module).href)) as Record<string, SourceDefinition<unknown>>;
const definition = mod[args.exportName]!;
const config = definition.configSchema.parse(args.config);
const controller = new AbortController();
process.once('SIGTERM', () => controller.abort());
const running = definition.start(config, args.mode, {
  log: logger,
  signal: controller.signal,
  stateDir: args.stateDir,
  emit: (detection) => appendFileSync(args.out, `${JSON.stringify(detection)}\n`),
});
process.stderr.write('source started\n');
await running.done;
