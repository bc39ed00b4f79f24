#!/usr/bin/env node
// `npm run bench`: runs every benchmark (bench/*.ts, except generators `gen-*` and helpers `_*`)
// one after the other — they measure, so they must not compete for the 2 cores — and gathers
// the result files they write in this run (bench/results/*.md) into bench/results/latest.md.
// `npm run bench -- ipv4 parse` runs only those.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !f.startsWith('gen-') && !f.startsWith('_'))
  .map((f) => f.slice(0, -3))
  .filter((n) => wanted.length === 0 || wanted.includes(n))
  .sort();

const started = Date.now();
const sections = [`# Benchmark results\n\nRun: ${new Date().toISOString()} on ${process.platform}/${process.arch}, Node ${process.version}.\n`];
let failed = 0;
for (const name of names) {
  process.stdout.write(`\n=== bench/${name}.ts ===\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(dir, `${name}.ts`)], { stdio: 'inherit', env: process.env });
  if (r.status !== 0) {
    failed += 1;
    sections.push(`## ${name}\n\nbench/${name}.ts exited with ${r.status}.\n`);
  }
}
// Each benchmark writes its own bench/results/*.md (a name of its choosing); gather the fresh ones.
const results = join(dir, 'results');
for (const file of readdirSync(results).filter((f) => f.endsWith('.md') && f !== 'latest.md').sort()) {
  if (statSync(join(results, file)).mtimeMs >= started) sections.push(readFileSync(join(results, file), 'utf8'));
}
writeFileSync(join(dir, 'results', 'latest.md'), sections.join('\n'));
process.stdout.write(`\nwrote bench/results/latest.md (${names.length} benchmarks, ${failed} failed)\n`);
process.exit(failed ? 1 : 0);
