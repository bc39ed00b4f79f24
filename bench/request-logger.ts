/**
 * The per-request child logger: pino's own `child({ reqId })` on the control plane's logger (level
 * info, its LOG_REDACTION), the baseline, against the same child on a logger with the redact paths
 * only, in the same run. Rounds alternate between the two; medians count. Also measures what the schema-derived secret redaction (formatters.log) adds to a
 * request's "request completed" line. Writes bench/results/request-logger.md.
 *
 *   npx tsx bench/request-logger.ts [--children 200000] [--rounds 7]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { pino, type Logger } from 'pino';
import { LOG_REDACTION, REDACT_PATHS } from '../apps/server/src/app.ts';
import { flag } from './_args.ts';

const here = dirname(fileURLToPath(import.meta.url));
const CHILDREN = flag('children', 200_000);
const ROUNDS = flag('rounds', 7);

let lastLine = '';
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    lastLine = chunk.toString('utf8');
    done();
  },
});
const logger = pino({ level: 'info', ...LOG_REDACTION }, sink);
const pathsOnly = pino({ level: 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);

const variants: Record<string, (reqId: string) => Logger> = {
  'pino child({ reqId })': (reqId) => logger.child({ reqId }),
  'pino child({ reqId }), paths only': (reqId) => pathsOnly.child({ reqId }),
};

// Each child's line carries its request id.
const lines = Object.values(variants).map((make) => {
  make('req-7').info({ settings: { ips: { x: { y: { password: 'hunter2' } } } } }, 'hello');
  return lastLine.replace(/"time":\d+,/, '');
});
if (!lines[0]!.includes('"reqId":"req-7"')) throw new Error(`the child lost its reqId: ${lines[0]}`);

const samples: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
let keep = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, make] of Object.entries(variants)) {
    const t0 = process.cpuUsage();
    for (let i = 0; i < CHILDREN; i++) if (make(`req-${i.toString(36)}`)) keep += 1;
    const d = process.cpuUsage(t0);
    samples[name]!.push(((d.user + d.system) * 1000) / CHILDREN);
  }
}
// A request's completion line, as fastify logs it, with and without the secret formatter.
const LINES = CHILDREN;
const lineVariants: Record<string, Logger> = { 'redact paths only': pathsOnly, 'paths + formatters.log (app.ts)': logger };
const lineSamples: Record<string, number[]> = Object.fromEntries(Object.keys(lineVariants).map((k) => [k, []]));
const res = { statusCode: 200 };
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, log] of Object.entries(lineVariants)) {
    const t0 = process.cpuUsage();
    for (let i = 0; i < LINES; i++) log.info({ res, responseTime: i / 7 }, 'request completed');
    const d = process.cpuUsage(t0);
    lineSamples[name]!.push(((d.user + d.system) * 1000) / LINES);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const [base, ours] = Object.keys(variants).map((k) => median(samples[k]!)) as [number, number];
const md = [
  '# Per-request child logger (bench/request-logger.ts)',
  '',
  `Run ${new Date().toISOString()}, Node ${process.version}, pino ${pino.version}; ${CHILDREN.toLocaleString('en')} children per round, ${ROUNDS} rounds each, alternating (${keep} made).`,
  '',
  '| child logger | ns CPU per child (median) | ratio to baseline |',
  '|---|---|---|',
  `| pino child({ reqId }) on the app's logger (paths + formatters.log) | ${Math.round(base)} | 1.00 |`,
  `| pino child({ reqId }) on a logger with paths only | ${Math.round(ours)} | ${(ours / base).toFixed(2)} |`,
  '',
  "Fastify makes one child per request; the server uses pino's own child (the hand-made child that wrote into pino's internals is gone: it saved about 20 ns once no wildcard paths were left).",
  '',
  '| "request completed" line | ns CPU per line (median) |',
  '|---|---|',
  ...Object.keys(lineVariants).map((k) => `| ${k} | ${Math.round(median(lineSamples[k]!))} |`),
  '',
  'formatters.log redacts the fields the contracts declare secret (secret()), at any depth; it walks only the logged object.',
  '',
  `Command: \`npx tsx bench/request-logger.ts --children ${CHILDREN} --rounds ${ROUNDS}\``,
  '',
].join('\n');
console.log(md);
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(join(here, 'results', 'request-logger.md'), md);
