/*
 * Agent benchmark (npx tsx bench/agent.ts):
 *  1. RSS of the bundled agent (apps/agent/scripts/bundle.mjs, dry-run enforcer) idle with an
 *     empty block list (target ≤ 60 MB; bare node with the same flags as reference) and holding
 *     a 1,000,000-address list (target ≤ 100 MB), fresh processes alternating over BENCH_ROUNDS
 *     (5) rounds; median and range. The 1,000,000 indicators come from a stand-in control plane
 *     that generates the /ips feed and the /ipv4 list on the fly (loading a million rows into the
 *     real store would take longer than the whole benchmark and does not change what the agent
 *     holds).
 *  2. Time from a server-side decision (POST /ips decision=1 on the real server) to the dry-run
 *     enforcer's file holding the address, over the WebSocket push; baseline: the POST's own
 *     round trip. Target ≤ 2 s.
 *  BENCH_BUSY=<n>: a busy host (issue 35 item 7): n processes spinning on the cores
 *     (bench/_cpu-burn.ts) for the whole run; writes bench/results/agent-busy.md instead.
 * Writes bench/results/agent.md; what follows its generated table (hand-written sections from
 * the first `### ` heading on) is kept.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { startCpuBurn } from './_cpu-burn.ts';
import { RampartClient } from '@rampart/client';
import { sampleUser } from '../packages/contracts/src/fixtures.ts';
import { seedOrg } from '../apps/server/test/support/app.ts';
import { agentHealth, freePort, runAgentCommand, spawnAgent, startControlPlane, tempDir, waitFor, writeAgentConfig } from '../test/e2e/support.ts';

/** The node flags of the packaged systemd unit (apps/agent/packaging/rampart-agent.service). */
const PACKAGED_NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '--expose-gc --max-semi-space-size=1 --max-old-space-size=256').split(' ');
/** The environment of the packaged unit: large buffers mmapped so freed ones go back to the OS. */
const PACKAGED_ENV: Record<string, string> = process.env.BENCH_NO_MALLOC_ENV ? {} : { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_TRIM_THRESHOLD_: '131072' };
const N = Number(process.env.BENCH_AGENT_ADDRESSES ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** `idle` or `full`: measure one side only (a quick probe; writes no results). */
const ONLY = process.env.BENCH_ONLY;
const VERBOSE = Boolean(process.env.BENCH_VERBOSE);
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 90_000);
/** Spinning processes making the host busy (0: none). */
const BUSY = Number(process.env.BENCH_BUSY ?? 0);
const OUT = BUSY > 0 ? 'agent-busy.md' : 'agent.md';
const MIN_SETTLE_MS = Number(process.env.BENCH_MIN_SETTLE_MS ?? 40_000);
const mb = (b: number) => (b / 2 ** 20).toFixed(1);
const PAGE = 1000;
const LIST_PAGE = 10_000;
const BASE = 11 * 2 ** 24; // 11.0.0.0/8: public unicast, far from every never-block range

function ipOf(i: number): string {
  const v = BASE + i * 3;
  return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
}

/** A control plane that serves `count` indicators: /ips pages by ts (ts = index + 1) and /ipv4 pages. */
async function standIn(count: number) {
  const now = Math.floor(Date.now() / 1000);
  const header = (ts: number, next: number) => ({
    type: 'IPv4', version: 2, ts: String(ts), next_ts: next, page_size: PAGE, delay: 0, eval: 'return 0;', exec_python: '0', user: sampleUser,
  });
  const server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/api/v1/ips') {
      const ts = Number(url.searchParams.get('ts') ?? 0);
      const size = Number(url.searchParams.get('page_size') ?? 50);
      const body = [];
      for (let i = ts; i < Math.min(count, ts + size); i++) {
        body.push({ gid: `RMP-RULE-GID-${i}`, ip: ipOf(i), ts: i + 1, entry_ts: now, is_network: false, score: 500, delay: 0, dec: 499, decision: null, ttl: null });
      }
      // ts = index + 1, and "now" for decay is real time: shift every record to now - small.
      for (const r of body) r.ts = now - 60 + (r.ts % 60);
      const next = Math.min(count, ts + size);
      const page = { header: header(ts, next), body: body.map((r, k) => ({ ...r, ts: Math.max(r.ts, 1) })) };
      // The cursor the agent follows is next_ts; keep it the index so pages never repeat.
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body.length ? page : { header: header(ts, ts), body: [] }));
      return;
    }
    if (url.pathname.startsWith('/api/v1/ipv4/')) {
      const start = Number(url.searchParams.get('page') ?? 0);
      const end = Math.min(count, start + LIST_PAGE);
      const lines: string[] = [];
      for (let i = start; i < end; i++) lines.push(ipOf(i));
      const headers: Record<string, string> = { 'content-type': 'text/plain' };
      if (end < count) headers.next_page = String(end);
      res.writeHead(200, headers).end(lines.length ? `${lines.join('\n')}\n` : '');
      return;
    }
    res.writeHead(404, { 'content-type': 'application/problem+json' }).end(
      JSON.stringify({ type: 'https://rampart.dev/problems/not_found', title: 'Not found', status: 404, detail: 'stand-in', instance: url.pathname }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

async function rssOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)![1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

interface MemoryRun {
  rss: number;
  peak: number;
  loadSeconds: number;
  /** Load average (1 min) when the agent started. */
  load: number;
}

/** One agent process holding `count` addresses, measured once its enforcer has settled. */
async function memoryRun(count: number, bin: string): Promise<MemoryRun> {
  const load = loadavg()[0]!;
  const cp = await standIn(count);
  const dir = await tempDir('rampart-bench-agent-');
  const metricsPort = await freePort();
  const dryRunPath = join(dir.path, 'dry-run.json');
  const configPath = join(dir.path, 'agent.json');
  await writeFile(join(dir.path, 'auth.log'), '');
  await writeAgentConfig(configPath, {
    controlPlaneUrl: cp.url, gaid: 'RMP-AGENT-ID-bench', stateDir: join(dir.path, 'state'), authLog: join(dir.path, 'auth.log'),
    dryRunPath, metricsPort, apiKey: 'bench', websocket: false, threshold: 50,
  });
  const cfg = JSON.parse(await readFile(configPath, 'utf8')) as { maximum_rules: number; local: Record<string, unknown> };
  cfg.maximum_rules = 2_000_000;
  cfg.local.log_level = 'warn';
  cfg.local.sync_cron = '*/30 * * * * *';
  await writeFile(configPath, JSON.stringify(cfg));
  const started = performance.now();
  const agent = spawnAgent(['run', '-c', configPath], PACKAGED_ENV, join(dir.path, 'agent.log'), bin, PACKAGED_NODE_ARGS);
  try {
    // Settled: the block set holds `count` and the dry-run enforcer has written all of it (the
    // set is evaluated before the enforcer's queue converges on it).
    await waitFor(`agent enforcing ${count}`, async () => {
      const h = await agentHealth(metricsPort);
      const enforcers = (h?.enforcers ?? []) as { enforced: number; busy?: unknown }[];
      if (VERBOSE && h) process.stdout.write(`  enforced ${String(h.enforced)} rss ${mb((await rssOf(agent.child.pid!)).rss)} MB\n`);
      return h && h.enforced === count && typeof h.last_sync_at === 'number' && enforcers.length > 0 && enforcers.every((e) => e.enforced === count && !e.busy);
    }, 600_000, VERBOSE ? 2000 : 200);
    const loadSeconds = (performance.now() - started) / 1000;
    // The steady state is what a host carries: after the load, V8 hands freed memory back only
    // once its memory reducer runs on an idle heap (measured: RSS flat for ~10 s, then down by
    // ~80 MB at 20–30 s). So RSS is read no sooner than MIN_SETTLE_MS after the load, and once it
    // has changed by less than 1 MB over the last 8 s (at most SETTLE_MS after the load).
    const samples: number[] = [];
    const from = performance.now();
    for (;;) {
      await new Promise((r) => setTimeout(r, 2000));
      samples.push((await rssOf(agent.child.pid!)).rss);
      const last = samples.slice(-5);
      const waited = performance.now() - from;
      if ((waited >= MIN_SETTLE_MS && last.length === 5 && Math.max(...last) - Math.min(...last) < 2 ** 20) || waited > SETTLE_MS) break;
    }
    const mem = await rssOf(agent.child.pid!);
    if (VERBOSE) process.stdout.write(`  ${count}: ${JSON.stringify((await agentHealth(metricsPort, 10_000))?.memory_mb)}\n${await topMappings(agent.child.pid!)}`);
    return { ...mem, loadSeconds, load };
  } catch (err) {
    process.stderr.write(`agent log tail:\n${(await readFile(join(dir.path, 'agent.log'), 'utf8').catch(() => '')).slice(-3000)}\n`);
    throw err;
  } finally {
    await agent.kill9();
    await cp.close();
    await dir.remove();
  }
}

/** The largest resident mappings of a process (BENCH_VERBOSE): where RSS that the heap figures miss is. */
async function topMappings(pid: number): Promise<string> {
  const text = await readFile(`/proc/${pid}/smaps`, 'utf8');
  const maps: { name: string; rss: number }[] = [];
  let current: { name: string; rss: number } | undefined;
  for (const line of text.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) maps.push((current = { name: head[1] || '[anon]', rss: 0 }));
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && current) current.rss += Number(rss[1]) * 1024;
  }
  const byName = new Map<string, { rss: number; n: number }>();
  for (const m of maps) {
    const e = byName.get(m.name) ?? { rss: 0, n: 0 };
    e.rss += m.rss;
    e.n += 1;
    byName.set(m.name, e);
  }
  const big = maps.filter((m) => m.name === '[anon]').sort((a, b) => b.rss - a.rss).slice(0, 8).map((m) => mb(m.rss));
  return `${[...byName].sort((a, b) => b[1].rss - a[1].rss).slice(0, 6).map(([k, v]) => `    ${mb(v.rss)} MB ${v.n}× ${k}`).join('\n')}\n    largest anon: ${big.join(', ')}\n`;
}

/** Bare node with the packaged flags (no code): the runtime's own floor, for the notes. */
async function bareNodeRss(): Promise<number> {
  const child = spawn(process.execPath, [...PACKAGED_NODE_ARGS, '-e', 'setInterval(() => {}, 1000)'], { env: { ...process.env, ...PACKAGED_ENV }, stdio: 'ignore' });
  try {
    await new Promise((r) => setTimeout(r, 1500));
    return (await rssOf(child.pid!)).rss;
  } finally {
    child.kill('SIGKILL');
  }
}

async function latencyRun(samples: number): Promise<{ latencies: number[]; posts: number[] }> {
  const cp = await startControlPlane();
  const dir = await tempDir('rampart-bench-latency-');
  const org = await seedOrg(cp.store, { credits: 10_000_000, trust: 1 });
  const metricsPort = await freePort();
  const dryRunPath = join(dir.path, 'dry-run.json');
  const configPath = join(dir.path, 'agent.json');
  await writeFile(join(dir.path, 'auth.log'), '');
  await writeAgentConfig(configPath, {
    controlPlaneUrl: cp.url, gaid: 'RMP-AGENT-ID-benchlat', stateDir: join(dir.path, 'state'), authLog: join(dir.path, 'auth.log'), dryRunPath, metricsPort,
  });
  const cfg = JSON.parse(await readFile(configPath, 'utf8')) as { local: Record<string, unknown> };
  cfg.local.log_level = 'warn';
  cfg.local.sync_cron = '0 0 * * *'; // no polling: only the push can deliver in time
  await writeFile(configPath, JSON.stringify(cfg));
  const reg = await runAgentCommand(['register', '-c', configPath], { RAMPART_ADMIN_KEY: org.keys.admin });
  if (reg.code !== 0) throw new Error(`register failed: ${reg.err}`);
  const agent = spawnAgent(['run', '-c', configPath], {}, join(dir.path, 'agent.log'));
  const admin = new RampartClient({ baseUrl: cp.url, apiKey: org.keys.admin });
  const latencies: number[] = [];
  const posts: number[] = [];
  try {
    await waitFor('agent connected', async () => (await agentHealth(metricsPort))?.channel_connected === true, 60_000);
    await waitFor('first sync', async () => typeof (await agentHealth(metricsPort))?.last_sync_at === 'number', 60_000);
    for (let i = 0; i < samples; i++) {
      const ip = `46.${10 + i}.0.1`;
      const t0 = performance.now();
      await admin.reportIp({ ip, confidence: 0.2, source: 'bench', decision: 1 });
      posts.push(performance.now() - t0);
      await waitFor(`${ip} enforced`, async () => (await readFile(dryRunPath, 'utf8').catch(() => '')).includes(`"${ip}/32"`), 30_000, 5);
      latencies.push(performance.now() - t0);
    }
  } finally {
    await agent.kill9();
    await cp.close();
    await dir.remove();
  }
  return { latencies, posts };
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const spread = (xs: number[], f: (x: number) => string) => `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
const load = () => loadavg().map((l) => l.toFixed(1)).join(', ');

// What runs on hosts: the bundled agent (apps/agent/scripts/bundle.mjs), no tsx loader.
const bundleDir = await tempDir('rampart-bench-bundle-');
const bundle = join(bundleDir.path, 'rampart-agent.mjs');
const built = spawnSync(process.execPath, [new URL('../apps/agent/scripts/bundle.mjs', import.meta.url).pathname, bundle], { encoding: 'utf8' });
if (built.status !== 0) throw new Error(`bundle failed: ${built.stderr}`);
const burn = BUSY > 0 ? startCpuBurn(BUSY) : undefined;
// The spinners' load shows in the 1-minute average after a while.
if (burn) await new Promise((r) => setTimeout(r, 30_000));
const loadAtStart = load();
const idle: MemoryRun[] = [];
const full: MemoryRun[] = [];
const bare: number[] = [];
// Alternating: the empty agent (baseline) and the loaded one, in turn, order swapped each round.
for (let round = 0; round < ROUNDS; round++) {
  bare.push(await bareNodeRss());
  for (const which of round % 2 === 0 ? (['idle', 'full'] as const) : (['full', 'idle'] as const)) {
    if (which === 'idle' && ONLY !== 'full') idle.push(await memoryRun(0, bundle));
    if (which === 'full' && ONLY !== 'idle') full.push(await memoryRun(N, bundle));
  }
  process.stdout.write(`round ${round + 1}: idle ${idle.at(-1) ? mb(idle.at(-1)!.rss) : '-'} MB, ${N} enforced ${full.at(-1) ? mb(full.at(-1)!.rss) : '-'} MB (peak ${full.at(-1) ? mb(full.at(-1)!.peak) : '-'} MB), bare node ${mb(bare.at(-1)!)} MB; load ${load()}\n`);
}
await bundleDir.remove();
const loadAtEnd = load();
await burn?.stop();
if (ONLY) process.exit(0);
const lat = process.env.BENCH_SKIP_LATENCY ? undefined : await latencyRun(20);

const idleRss = idle.map((r) => r.rss);
const fullRss = full.map((r) => r.rss);
const verdict = (value: number, limit: number) => (value <= limit ? 'met' : 'missed');
const MBf = (b: number) => `${mb(b)} MB`;
const lines = [
  BUSY > 0 ? '## agent on a busy host (issue 35 item 7)' : '## agent',
  '',
  `Command: \`${BUSY > 0 ? `BENCH_BUSY=${BUSY} ` : ''}npx tsx bench/agent.ts\` (${new Date().toISOString()}, Node ${process.version}, ${process.platform}/${process.arch}). The bundled agent`,
  `(apps/agent/scripts/bundle.mjs) with the packaged unit's node flags (\`${PACKAGED_NODE_ARGS.join(' ')}\`) and environment, dry-run enforcer.`,
  `${ROUNDS} rounds, each a fresh agent holding an empty list (baseline) and one holding ${N.toLocaleString('en-US')} addresses, in turn`,
  `(order swapped every round); RSS read at least ${MIN_SETTLE_MS / 1000} s after the enforcer has written the whole set (V8's memory reducer`,
  `returns the load's garbage only after 20–30 s of idle) and once it has changed by less than 1 MB over 8 s (at most ${SETTLE_MS / 1000} s after). Median (min–max).`,
  `Load average (1, 5, 15 min): ${loadAtStart} at start, ${loadAtEnd} at the end (2 cores${BUSY > 0 ? `; a busy host: ${BUSY} processes spinning on the cores for the whole run (bench/_cpu-burn.ts, BENCH_BUSY=${BUSY})` : ', shared with other work'}).`,
  '',
  '| measure | value | baseline (same run) | ratio | target | verdict |',
  '|---|---|---|---|---|---|',
  `| agent RSS idle (empty list, sshd source, dry-run enforcer) | ${spread(idleRss, MBf)} | bare node ${spread(bare, MBf)} | ${(median(idleRss) / median(bare)).toFixed(2)}× | ≤ 60 MB | ${verdict(median(idleRss), 60 * 2 ** 20)} |`,
  `| agent RSS enforcing ${N.toLocaleString('en-US')} addresses (dry-run) | ${spread(fullRss, MBf)} | idle ${MBf(median(idleRss))} | ${(median(fullRss) / median(idleRss)).toFixed(2)}× | ≤ 100 MB | ${verdict(median(fullRss), 100 * 2 ** 20)} |`,
  `| agent RSS idle${BUSY > 0 ? ', busy host' : ''} (issue 35 item 7) | ${spread(idleRss, MBf)} | bare node ${spread(bare, MBf)} | | ≤ 70 MB | ${verdict(median(idleRss), 70 * 2 ** 20)} |`,
  `| agent RSS enforcing ${N.toLocaleString('en-US')} addresses${BUSY > 0 ? ', busy host' : ''} (issue 35 item 7${BUSY > 0 ? '' : ': the target is for a busy host, see agent-busy.md'}) | ${spread(fullRss, MBf)} | idle ${MBf(median(idleRss))} | | ≤ 120 MB | ${verdict(median(fullRss), 120 * 2 ** 20)} |`,
  `| agent peak RSS (VmHWM) during the load | ${spread(full.map((r) => r.peak), MBf)} | idle ${MBf(median(idle.map((r) => r.peak)))} | | | |`,
  `| start to ${N.toLocaleString('en-US')} enforced (feed walk + /ipv4 list + dry-run write) | ${spread(full.map((r) => r.loadSeconds), (x) => `${x.toFixed(1)} s`)} | idle ${median(idle.map((r) => r.loadSeconds)).toFixed(1)} s | | | |`,
  ...(lat
    ? [
        `| decision → dry-run enforcer, median of ${lat.latencies.length} | ${pct(lat.latencies, 50).toFixed(0)} ms | POST /ips ${pct(lat.posts, 50).toFixed(0)} ms | ${(pct(lat.latencies, 50) / pct(lat.posts, 50)).toFixed(1)}× | ≤ 2000 ms | ${verdict(pct(lat.latencies, 50), 2000)} |`,
        `| decision → dry-run enforcer, max | ${Math.max(...lat.latencies).toFixed(0)} ms | POST /ips max ${Math.max(...lat.posts).toFixed(0)} ms | | ≤ 2000 ms | ${verdict(Math.max(...lat.latencies), 2000)} |`,
      ]
    : []),
  '',
  '| round | bare node MB | idle agent MB (load average at its start) | agent with 1,000,000 MB (load average at its start) |'.replace('1,000,000', N.toLocaleString('en-US')),
  '|---|---|---|---|',
  ...bare.map((b, k) => `| ${k + 1} | ${mb(b)} | ${idle[k] ? `${mb(idle[k].rss)} (${idle[k].load.toFixed(2)}${idle[k].load > 2 ? ', above 2' : ''})` : '—'} | ${full[k] ? `${mb(full[k].rss)} (${full[k].load.toFixed(2)}${full[k].load > 2 ? ', above 2' : ''})` : '—'} |`),
  '',
];
process.stdout.write(`${lines.join('\n')}\n`);
await mkdir(new URL('./results/', import.meta.url), { recursive: true });
// Hand-written sections after the generated table (from its first `### ` heading) stay.
const previous = await readFile(new URL(`./results/${OUT}`, import.meta.url), 'utf8').catch(() => '');
const notes = previous.indexOf('\n### ');
await writeFile(new URL(`./results/${OUT}`, import.meta.url), `${lines.join('\n')}\n${notes >= 0 ? previous.slice(notes + 1) : ''}`);
process.exit(0);
