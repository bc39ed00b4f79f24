#!/usr/bin/env node
// `npm run bench`: runs every benchmark (bench/*.ts, except generators `gen-*` and helpers `_*`)
// one after the other — they measure, so they must not compete for the 2 cores — and gathers
// the result files they write in this run (bench/results/*.md) into bench/results/latest.md,
// headed by every verdict row of those files (a table row or line that says met or missed) and the
// load average before and after (the machine's other work skews every ratio; see each file).
// `npm run bench -- ipv4 parse` runs only those.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
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
const loadBefore = loadavg();
const sections = [];
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
const verdicts = [];
for (const file of readdirSync(results).filter((f) => f.endsWith('.md') && f !== 'latest.md').sort()) {
  if (statSync(join(results, file)).mtimeMs < started) continue;
  const text = readFileSync(join(results, file), 'utf8');
  sections.push(text);
  for (const line of text.split('\n')) if (/\b(met|missed)\b/.test(line)) verdicts.push(`- ${file}: ${line.replace(/^[-|\s]+|[|\s]+$/g, '').replaceAll(' | ', '; ')}`);
}
const fmt = (l) => l.map((x) => x.toFixed(2)).join(' ');
const head = [
  '# Benchmark results',
  '',
  `Run: ${new Date(started).toISOString()} on ${process.platform}/${process.arch}, Node ${process.version}; load average before ${fmt(loadBefore)}, after ${fmt(loadavg())}.`,
  '',
  '## Verdicts',
  '',
  ...(verdicts.length ? verdicts : ['(no verdict rows in this run)']),
  '',
].join('\n');
writeFileSync(join(dir, 'results', 'latest.md'), [head, ...sections].join('\n'));
process.stdout.write(`\nwrote bench/results/latest.md (${names.length} benchmarks, ${failed} failed)\n`);
process.exit(failed ? 1 : 0);
