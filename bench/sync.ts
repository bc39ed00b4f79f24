/*
 * Live sync channel at scale (issue 4): N idle agent connections (default 10,000) on one server
 * process, what they cost in server memory, and how long one `settings_changed` takes to reach
 * all of them. Baselines in the same run: the server's RSS with a single connection, and the
 * time for the same change to reach that single agent.
 *   targets: RSS with N connections < 300 MB; fan-out to all N < 2 s.
 * The server runs in a child process (bench/_sync-server.ts) so its RSS is its own; this process
 * holds the N client sockets, so each side needs N file descriptors (`ulimit -n`).
 * Writes bench/results/sync.md.   Run: npx tsx bench/sync.ts [--agents 10000] [--rounds 3]
 */
import { execSync, spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { flag } from './_args.ts';

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = flag('rounds', 3);
const CONCURRENCY = 200;
const MB = 1024 * 1024;

const fdLimit = Number(execSync('ulimit -n', { shell: '/bin/sh' }).toString().trim());
const wanted = flag('agents', 10_000);
const AGENTS = Math.min(wanted, fdLimit - 500);
if (AGENTS < wanted) console.log(`bench/sync: ulimit -n is ${fdLimit}; running ${AGENTS} agents instead of ${wanted} (raise it with ulimit -n ${wanted + 1000})`);

interface Ready { port: number; adminKey: string; tokens: string[]; store: string }
interface Memory { rss: number; heapUsed: number; external: number; connections: number }

const server = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', join(here, '_sync-server.ts')], {
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  env: { ...process.env, SYNC_AGENTS: String(AGENTS) },
});
const waiters: ((m: unknown) => void)[] = [];
server.on('message', (m) => waiters.shift()?.(m));
server.on('exit', (code) => {
  if (code) {
    console.error(`bench/sync: server exited with ${code}`);
    process.exit(1);
  }
});
const nextMessage = <T>() => new Promise<T>((resolve) => waiters.push(resolve as (m: unknown) => void));
const memory = async () => {
  const reply = nextMessage<Memory>();
  server.send({ type: 'rss' });
  return reply;
};

const t0 = performance.now();
const ready = await nextMessage<Ready>();
const seedSeconds = (performance.now() - t0) / 1000;
const base = `http://127.0.0.1:${ready.port}/api/v1`;

/** Per client: when it last received an organization settings_changed, and its version. */
const received: { version: number; at: number }[] = [];
const sockets: WebSocket[] = [];

function connect(i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/agents/sync`, { headers: { authorization: ready.tokens[i]! }, perMessageDeflate: false });
    received[i] = { version: -1, at: 0 };
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString()) as { type: string; subject?: string; version?: number; nonce?: string };
      if (m.type === 'hello') resolve();
      else if (m.type === 'settings_changed' && m.subject === 'organization') received[i] = { version: m.version!, at: performance.now() };
      else if (m.type === 'ping') ws.send(JSON.stringify({ type: 'pong', nonce: m.nonce }));
    });
    ws.once('unexpected-response', (_req, res) => reject(new Error(`agent ${i}: HTTP ${res.statusCode}`)));
    ws.once('error', reject);
    sockets[i] = ws;
  });
}

async function connectRange(from: number, to: number): Promise<void> {
  let next = from;
  const worker = async () => {
    while (next < to) await connect(next++);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, to - from) }, worker));
}

let orgVersion = 0;
/** Replaces the organization document once; resolves when `count` agents have the new version. */
async function fanOut(count: number): Promise<number> {
  orgVersion += 1;
  const started = performance.now();
  const res = await fetch(`${base}/organization/config`, {
    method: 'PUT',
    headers: { authorization: ready.adminKey, 'content-type': 'application/json' },
    body: JSON.stringify({ reserved_ips: [`198.51.100.${orgVersion}`] }),
  });
  if (res.status !== 200) throw new Error(`PUT /organization/config: ${res.status} ${await res.text()}`);
  const deadline = started + 30_000;
  for (;;) {
    let done = 0;
    let last = 0;
    for (let i = 0; i < count; i++) {
      const r = received[i]!;
      if (r.version === orgVersion) {
        done += 1;
        last = Math.max(last, r.at);
      }
    }
    if (done === count) return last - started;
    if (performance.now() > deadline) throw new Error(`only ${done} of ${count} agents got version ${orgVersion}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

await connectRange(0, 1);
const one = await memory();
const oneLatency: number[] = [];
for (let r = 0; r < ROUNDS; r++) oneLatency.push(await fanOut(1));

const c0 = performance.now();
await connectRange(1, AGENTS);
const connectSeconds = (performance.now() - c0) / 1000;
const all = await memory();
const allLatency: number[] = [];
for (let r = 0; r < ROUNDS; r++) allLatency.push(await fanOut(AGENTS));

const rssCost = all.rss - one.rss;
const heapCost = all.heapUsed + all.external - (one.heapUsed + one.external);
// RSS growth understates the cost when the heap grows into pages freed earlier (the server
// parses its offline geolocation data at start), so the larger of the two counts.
const cost = Math.max(rssCost, heapCost);
const lines = [
  `## Sync channel (${new Date().toISOString()}, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${cpus().length} cores)`,
  '',
  `${AGENTS} idle agent connections on one server process (store: ${ready.store}); ${ROUNDS} organization settings changes each.`,
  `Seeding ${AGENTS} agents and keys: ${seedSeconds.toFixed(1)} s (includes server start); connecting them (auth + hello, ${CONCURRENCY} at a time): ${connectSeconds.toFixed(1)} s (${Math.round((AGENTS - 1) / connectSeconds)}/s).`,
  '',
  '| measure | 1 agent (baseline) | all agents | ratio | target |',
  '|---|---|---|---|---|',
  `| server RSS (after GC) | ${(one.rss / MB).toFixed(1)} MB | ${(all.rss / MB).toFixed(1)} MB (${all.connections} connected) | ${(all.rss / one.rss).toFixed(2)}x | |`,
  `| server heap used + external | ${((one.heapUsed + one.external) / MB).toFixed(1)} MB | ${((all.heapUsed + all.external) / MB).toFixed(1)} MB | ${((all.heapUsed + all.external) / (one.heapUsed + one.external)).toFixed(2)}x | |`,
  `| memory cost of the connections: max(RSS growth ${(rssCost / MB).toFixed(1)} MB, heap+external growth ${(heapCost / MB).toFixed(1)} MB) | | ${(cost / MB).toFixed(1)} MB (${(cost / (AGENTS - 1) / 1024).toFixed(1)} KB each) | | < 300 MB |`,
  `| settings_changed reaches every agent (median of ${ROUNDS}) | ${median(oneLatency).toFixed(1)} ms | ${median(allLatency).toFixed(1)} ms (max ${Math.max(...allLatency).toFixed(1)} ms) | ${(median(allLatency) / median(oneLatency)).toFixed(1)}x | < 2000 ms |`,
  '',
  'The baseline RSS is mostly the offline geolocation and ASN data every server loads at start (tools);',
  'the connections themselves cost the figure in the third row. Latency is from sending the PUT to the',
  "last agent's receipt, both ends on this machine.",
  '',
];
const text = lines.join('\n');
console.log(text);
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(join(here, 'results', 'sync.md'), `${text}\n`);

for (const ws of sockets) ws.terminate();
server.send({ type: 'stop' });
const ok = cost < 300 * MB && Math.max(...allLatency) < 2000;
process.exit(ok ? 0 : 1);
