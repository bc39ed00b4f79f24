#!/usr/bin/env node
// Lint with a ratchet: oxlint (type-aware through tsgolint, which reads TypeScript 7 projects) runs
// the rules of .oxlintrc.json; lint-baseline.json records how many findings each file had per rule
// when the rule arrived. A file may only go down: a finding in a file or rule without a recorded
// count, or more than recorded, fails. `npm run lint -- --update` rewrites the baseline, which
// a review should only ever see shrink.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const baselineFile = join(root, 'lint-baseline.json');
const update = process.argv.includes('--update');

const run = spawnSync(
  join(root, 'node_modules/.bin/oxlint'),
  ['--type-aware', '-f', 'json', 'apps', 'packages', 'plugins', 'test', 'bench', 'scripts'],
  { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
);
if (run.error) throw run.error;
let report;
try {
  report = JSON.parse(run.stdout);
} catch {
  process.stderr.write(run.stdout + run.stderr);
  console.error('lint: oxlint did not produce a report');
  process.exit(2);
}

/** file → rule → [findings] */
const found = {};
for (const d of report.diagnostics) {
  const file = relative(root, join(root, d.filename));
  const rule = d.code ?? 'unknown';
  ((found[file] ??= {})[rule] ??= []).push(d);
}
const counts = Object.fromEntries(
  Object.entries(found)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([file, rules]) => [file, Object.fromEntries(Object.entries(rules).sort(([a], [b]) => a.localeCompare(b)).map(([r, l]) => [r, l.length]))]),
);

if (update) {
  writeFileSync(baselineFile, JSON.stringify(counts, null, 2) + '\n');
  const total = Object.values(counts).flatMap((r) => Object.values(r)).reduce((a, b) => a + b, 0);
  console.log(`lint: baseline written, ${total} findings in ${Object.keys(counts).length} files`);
  process.exit(0);
}

const baseline = existsSync(baselineFile) ? JSON.parse(readFileSync(baselineFile, 'utf8')) : {};
const grown = [];
let shrunk = 0;
for (const [file, rules] of Object.entries(found)) {
  for (const [rule, list] of Object.entries(rules)) {
    const allowed = baseline[file]?.[rule] ?? 0;
    if (list.length > allowed) grown.push({ file, rule, allowed, list });
  }
}
for (const [file, rules] of Object.entries(baseline)) {
  for (const [rule, allowed] of Object.entries(rules)) {
    if ((counts[file]?.[rule] ?? 0) < allowed) shrunk++;
  }
}
if (grown.length > 0) {
  for (const { file, rule, allowed, list } of grown) {
    console.error(`${file}: ${rule}: ${list.length} findings, baseline ${allowed}`);
    for (const d of list) {
      const at = d.labels?.[0]?.span;
      console.error(`  ${at ? `line ${at.line}:${at.column} ` : ''}${d.message}`);
    }
  }
  console.error(`lint: ${grown.length} file/rule pairs above the baseline (lint-baseline.json); fix them (the baseline only shrinks)`);
  process.exit(1);
}
const total = Object.values(counts).flatMap((r) => Object.values(r)).reduce((a, b) => a + b, 0);
console.log(`lint: ${report.number_of_files} files, ${report.number_of_rules} rules, ${total} findings, none above the baseline`
  + (shrunk > 0 ? `; ${shrunk} file/rule pairs below it: run \`npm run lint -- --update\` to ratchet it down` : ''));
