#!/usr/bin/env node
// `npm run bench`: runs every benchmark (bench/*.ts, except generators `gen-*` and helpers `_*`)
// one after the other — they measure, so they must not compete for the 2 cores — and gathers
// their result files (bench/results/<name>.md) into bench/results/latest.md.
// `npm run bench -- ipv4 parse` runs only those.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !f.startsWith('gen-') && !f.startsWith('_'))
  .map((f) => f.slice(0, -3))
  .filter((n) => wanted.length === 0 || wanted.includes(n))
  .sort();

const sections = [`# Benchmark results\n\nRun: ${new Date().toISOString()} on ${process.platform}/${process.arch}, Node ${process.version}.\n`];
let failed = 0;
for (const name of names) {
  process.stdout.write(`\n=== bench/${name}.ts ===\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(dir, `${name}.ts`)], { stdio: 'inherit', env: process.env });
  if (r.status !== 0) failed += 1;
  const result = join(dir, 'results', `${name}.md`);
  sections.push(existsSync(result) ? readFileSync(result, 'utf8') : `## ${name}\n\nNo result file (exit ${r.status}).\n`);
}
writeFileSync(join(dir, 'results', 'latest.md'), sections.join('\n'));
process.stdout.write(`\nwrote bench/results/latest.md (${names.length} benchmarks, ${failed} failed)\n`);
process.exit(failed ? 1 : 0);
