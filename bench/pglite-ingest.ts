/*
 * What durability costs the embedded store: POST /ips reports/s with 16 concurrent clients on
 * PGlite on disk, as it ships (fsync off, no fsync in its file system: "none") and as the server
 * runs it (fsync on every commit: "fsync"). Runs alternate none/fsync so that a loaded machine's
 * drift hits both alike; each figure is the median of its rounds. Server and client share this
 * process (the control plane as buildApp builds it, auth, coins and rate limiting on).
 *
 *   npx tsx bench/pglite-ingest.ts [--rounds 3] [--duration 8] [--connections 16]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { buildApp } from '../apps/server/src/app.ts';
import { testConfig } from '../apps/server/src/config.ts';
import { createApiKey, createOrganization, createUser } from '../apps/server/src/services/admin.ts';
import { openPglite } from '../apps/server/src/store/pglite-driver.ts';
import { migrate, storeOver } from '../apps/server/src/store/index.ts';

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => (args.includes(`--${name}`) ? Number(args[args.indexOf(`--${name}`) + 1]) : fallback);
const ROUNDS = flag('rounds', 3);
const DURATION = flag('duration', 8);
const CONNECTIONS = flag('connections', 16);

async function round(mode: 'none' | 'fsync'): Promise<{ rps: number; p99: number; bad: number; syncs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-bench-pglite-'));
  const db = await openPglite(join(dir, 'data'), { durable: mode === 'fsync' });
  await migrate(db);
  const store = storeOver(db);
  const keys: string[] = [];
  for (let o = 0; o < CONNECTIONS; o += 1) {
    const org = await createOrganization(store, { name: `Bench ${o}`, credits: 1_000_000_000, trust: 0.7 });
    const username = `c${o}@bench.example`;
    await createUser(store, { orgGid: org.gid, username, role: 2 });
    keys.push((await createApiKey(store, { username })).key);
  }
  const app = await buildApp({ config: testConfig({ rateLimitPerMinute: 1_000_000_000, allowNonPublicReports: true }), store, ipv4Mirror: null });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  let n = 0;
  const syncsBefore = db.stats().syncs ?? 0;
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION,
    requests: [
      {
        method: 'POST',
        path: '/api/v1/ips',
        setupRequest: (req: Record<string, unknown>) => {
          n += 1;
          // Half new addresses, half reports on ones already held.
          const i = n % 2 === 0 ? n : n - 1;
          return { ...req, headers: { 'content-type': 'application/json', authorization: keys[n % keys.length]! }, body: JSON.stringify({ ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, confidence: 0.7, source: 'ssh' }) };
        },
      },
    ],
  } as autocannon.Options);
  const syncs = (db.stats().syncs ?? 0) - syncsBefore;
  await app.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return { rps: result.requests.average, p99: result.latency.p99, bad: result.non2xx + result.errors, syncs };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const runs: Record<'none' | 'fsync', { rps: number; p99: number; bad: number; syncs: number }[]> = { none: [], fsync: [] };
for (let r = 0; r < ROUNDS; r += 1) {
  for (const mode of ['none', 'fsync'] as const) {
    const run = await round(mode);
    runs[mode].push(run);
    console.log(`round ${r + 1} ${mode}: ${Math.round(run.rps)} reports/s, p99 ${run.p99} ms, non-2xx+errors ${run.bad}, fsyncs ${run.syncs}`);
  }
}
const none = median(runs.none.map((x) => x.rps));
const fsync = median(runs.fsync.map((x) => x.rps));
console.log(`median: none ${Math.round(none)} reports/s, fsync ${Math.round(fsync)} reports/s, ratio ${(fsync / none).toFixed(2)} (${CONNECTIONS} connections, ${DURATION} s x ${ROUNDS})`);
