#!/usr/bin/env node
// `npm run bench`: runs every benchmark (bench/*.ts, except generators `gen-*` and helpers `_*`)
// one after the other — they measure, so they must not compete for the 2 cores — and writes
// bench/results/latest.md: the load average before and after each benchmark, one table of every
// verdict row the result files of this run hold (file, row, measured, limit, verdict), then those
// files themselves. A benchmark with a target of issue 22 that wrote no verdict row, or that
// failed, gets a row saying so.
//
//   npm run bench                      every benchmark, full sizes
//   npm run bench -- ipv4 pg-ingest    only those
//   npm run bench -- --collect         no run: latest.md's verdicts again from the last run's files
//   npm run bench -- --quick           smaller sizes and fewer rounds (QUICK below): minutes
//                                      instead of an hour; verdicts then are indicative only
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const results = join(dir, 'results');
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const collect = argv.includes('--collect');
const wanted = argv.filter((a) => !a.startsWith('--'));

/** Each benchmark's smaller sizes for --quick: the flags or environment it already accepts. */
const QUICK = {
  agent: { env: { BENCH_AGENT_ADDRESSES: '100000' } },
  cli: { args: ['--rounds', '2'] },
  'decision-to-drop': { env: { BENCH_DECISIONS: '3' } },
  indicators: { args: ['--scale', '0.05', '--duration', '2', '--rounds', '1'] },
  ipv4: { args: ['--n', '100000', '--walk-seconds', '5'] },
  'list-enforcers': { args: ['1'] },
  lists: { args: ['--n', '100000', '--duration', '2', '--rounds', '1'] },
  lookups: { args: ['--n', '100000', '--duration', '2', '--rounds', '3'] },
  parse: { env: { RAMPART_BENCH_LINES: '100000' } },
  'pg-ingest': { args: ['--rounds', '3', '--duration', '2', '--n', '20000'] },
  'pglite-ingest': { args: ['--rounds', '1', '--duration', '3'] },
  'request-logger': { args: ['--children', '20000', '--rounds', '3'] },
  'server-footprint': { args: ['--rounds', '2', '--idle', '2'] },
  'server-memory': { args: ['--reports', '2000'] },
  sync: { args: ['--agents', '1000', '--rounds', '1'] },
  'push-bursts': { args: ['--bursts', '5'] },
  'scale-10m': { args: ['--indicators', '200000', '--agents', '1000', '--decisions', '5', '--lookup-seconds', '3'] },
};

/**
 * Runs of a benchmark under another name, with settings of their own: the agent on a busy host
 * (issue 35 item 7: three processes spinning on the cores for the whole run; agent-busy.md).
 */
const VARIANTS = { 'agent-busy': { script: 'agent', env: { BENCH_BUSY: '3' } } };

/** Benchmarks run only when named (`npm run bench -- scale-10m`, or their own npm script). */
const ON_REQUEST = ['scale-10m'];

/** Benchmarks that carry a target of issue 22: each must write at least one verdict row. */
const TARGETED = ['agent', 'agent-busy', 'list-enforcers', 'lists', 'lookups', 'parse', 'pg-ingest', 'pglite-ingest', 'server-footprint', 'server-memory'];

/** `| a | b |` → ['a', 'b']. */
const cells = (line) => line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
const isVerdict = (cell) => /^(met|missed)\b/.test(cell);
const pick = (header, row, test) => {
  const i = header.findIndex(test);
  return i >= 0 && row[i] !== undefined ? row[i] : null;
};

/**
 * Verdict rows of one results file: table rows with a cell that says met or missed (the other
 * columns found by their headers: measured or ratio, limit, or a header that is itself the
 * limit such as `≤ 1.5×`), and prose lines of the form `what: measured (target LIMIT: met)`.
 */
export function verdictRows(text) {
  const out = [];
  const lines = text.split('\n');
  let header = null;
  for (const [i, line] of lines.entries()) {
    if (line.trim().startsWith('|')) {
      if (/^\|[\s|:-]+\|$/.test(line.trim())) continue;
      if (/^\|[\s|:-]+\|$/.test((lines[i + 1] ?? '').trim())) {
        header = cells(line).map((h) => h.toLowerCase());
        continue;
      }
      const row = cells(line);
      const v = row.findIndex(isVerdict);
      if (v < 0) continue;
      const h = header ?? [];
      const verdictHeader = h[v] ?? '';
      const limit = pick(h, row, (x, i) => x.startsWith('limit') || x === 'target value' || (x === 'target' && i > 0)) ?? (/^[≤≥<>]/.test(verdictHeader) ? verdictHeader : '—');
      const measured = pick(h, row, (x) => x.startsWith('measured') || x === 'value') ?? pick(h, row, (x) => x.includes('ratio')) ?? (row.slice(1, v).join('; ') || '—');
      out.push({ row: row[0], measured, limit, verdict: row[v].match(/^(met|missed)/)[1] });
      continue;
    }
    header = null;
    const m = /^[-*\s]*(.+?):\s*(.*?)\s*\(target\s*([^:]+):\s*(met|missed)\)/.exec(line);
    if (m) out.push({ row: m[1], measured: m[2] || '—', limit: m[3], verdict: m[4] });
    else if (/[:(—-]\s*(met|missed)\b/.test(line)) out.push({ row: line.replace(/^[-*\s]+/, '').slice(0, 160), measured: '—', limit: '—', verdict: /\bmet\b/.test(line) ? 'met' : 'missed' });
  }
  return out;
}

function main() {
  const names = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.startsWith('gen-') && !f.startsWith('_'))
    .map((f) => f.slice(0, -3))
    // The scale benchmark (tens of minutes, gigabytes) runs only when named: `npm run bench:scale`.
    .filter((n) => (wanted.length === 0 ? !ON_REQUEST.includes(n) : wanted.includes(n)))
    .sort()
    // Variants last: the busy host's spinning leaves the load average high for minutes after.
    .concat(Object.keys(VARIANTS).filter((n) => wanted.length === 0 || wanted.includes(n)));

  const fmt = (l) => l.map((x) => x.toFixed(2)).join(' ');
  let started = Date.now();
  let loadBefore = loadavg();
  let loadAfter = null;
  let command = `npm run bench${argv.length ? ` -- ${argv.join(' ')}` : ''}`;
  const runs = [];
  if (collect) {
    // --collect: the verdicts of the last run again, from its result files as they are now (a
    // results file corrected by hand, or the parser improved), without running anything.
    const last = readFileSync(join(results, 'latest.md'), 'utf8');
    const run = /^Run: (\S+) on .*?; `([^`]+)`/m.exec(last);
    const loads = /^Load average \(1, 5, 15 min\) before ([\d. ]+), after ([\d. ]+);/m.exec(last);
    if (!run || !loads) throw new Error('bench/results/latest.md: no run to collect');
    started = Date.parse(run[1]);
    command = run[2];
    const nums = (t) => t.trim().split(/\s+/).map(Number);
    loadBefore = nums(loads[1]);
    loadAfter = nums(loads[2]);
    const table = last.slice(last.indexOf('## Benchmarks'));
    for (const line of table.split('\n').slice(4)) {
      if (!line.startsWith('|')) break;
      const [name, status, seconds, load0, load1, files] = cells(line);
      runs.push({ name, status: Number(status), seconds: Number(seconds), load0: nums(load0), load1: nums(load1), files: files === '—' ? [] : files.split(', ') });
    }
  }
  for (const name of collect ? [] : names) {
    const variant = VARIANTS[name];
    const script = variant?.script ?? name;
    const quickExtra = quick ? (QUICK[script] ?? {}) : {};
    const extra = { args: quickExtra.args, env: { ...quickExtra.env, ...variant?.env } };
    process.stdout.write(`\n=== bench/${script}.ts${variant ? ` (${name})` : ""} ${(extra.args ?? []).join(" ")} ===\n`);
    const t0 = Date.now();
    const load0 = loadavg();
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(dir, `${script}.ts`), ...(extra.args ?? [])], { stdio: 'inherit', env: { ...process.env, ...extra.env } });
    // Each benchmark writes its own bench/results/*.md (a name of its choosing): those written while it ran are its.
    const files = readdirSync(results).filter((f) => f.endsWith('.md') && f !== 'latest.md' && statSync(join(results, f)).mtimeMs >= t0);
    runs.push({ name, status: r.status ?? r.signal, seconds: (Date.now() - t0) / 1000, load0, load1: loadavg(), files });
  }

  const verdicts = [];
  const sections = [];
  for (const run of runs) {
    let rows = 0;
    for (const file of run.files) {
      const text = readFileSync(join(results, file), 'utf8');
      sections.push(text);
      for (const v of verdictRows(text)) {
        verdicts.push({ file, ...v });
        rows += 1;
      }
    }
    if (run.status !== 0) verdicts.push({ file: `bench/${run.name}.ts`, row: `exited with ${run.status}`, measured: '—', limit: '—', verdict: 'failed' });
    else if (rows === 0 && TARGETED.includes(run.name)) verdicts.push({ file: run.files.join(', ') || `bench/${run.name}.ts`, row: 'no verdict row written', measured: '—', limit: '—', verdict: 'none' });
  }

  const esc = (s) => String(s).replaceAll('|', '\\|');
  const head = [
    '# Benchmark results',
    '',
    `Run: ${new Date(started).toISOString()} on ${process.platform}/${process.arch}, Node ${process.version}; \`${command}\`${quick ? ' (quick: smaller sizes and fewer rounds, verdicts indicative only)' : ''}.`,
    `Load average (1, 5, 15 min) before ${fmt(loadBefore)}, after ${fmt(loadAfter ?? loadavg())}; the machine's other work skews every ratio (see each file).`,
    '',
    '## Verdicts',
    '',
    '| file | row | measured | limit | verdict |',
    '|---|---|---|---|---|',
    ...verdicts.map((v) => `| ${esc(v.file)} | ${esc(v.row)} | ${esc(v.measured)} | ${esc(v.limit)} | ${v.verdict} |`),
    '',
    '## Benchmarks',
    '',
    '| benchmark | exit | seconds | load average before | after | result files |',
    '|---|---|---|---|---|---|',
    ...runs.map((r) => `| ${r.name} | ${r.status} | ${r.seconds.toFixed(0)} | ${fmt(r.load0)} | ${fmt(r.load1)} | ${r.files.join(', ') || '—'} |`),
    '',
  ].join('\n');

  writeFileSync(join(results, 'latest.md'), [head, ...sections].join('\n'));
  const failed = runs.filter((r) => r.status !== 0).length;
  process.stdout.write(`\nwrote bench/results/latest.md (${runs.length} benchmarks, ${failed} failed, ${verdicts.length} verdict rows)\n`);
  process.exit(failed ? 1 : 0);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
