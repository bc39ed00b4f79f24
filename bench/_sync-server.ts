/*
 * The server half of bench/sync.ts: one control-plane process (embedded store unless
 * DATABASE_URL is set) with one organization and SYNC_AGENTS registered agents, each with its
 * own key. Tells its parent the port, an admin key and the agent keys over IPC, then answers
 * `rss` requests with its memory after a full GC. Started by bench/sync.ts; not run alone.
 */
import { randomBytes } from 'node:crypto';
import { ROLE, AgentSettingsDocument } from '@rampart/contracts';
import { buildApp } from '../apps/server/src/app.ts';
import { testConfig } from '../apps/server/src/config.ts';
import { createApiKey, createOrganization, createUser } from '../apps/server/src/services/operators/admin.ts';
import { openStore } from '../apps/server/src/store/index.ts';

const agents = Number(process.env.SYNC_AGENTS ?? 10_000);
const store = await openStore({ databaseUrl: process.env.DATABASE_URL });
// The bench's agents all connect from 127.0.0.1: the per-address rate limit would refuse them.
const app = await buildApp({ config: testConfig({ rateLimitPerMinute: 10_000_000, authCacheSeconds: 300 }), store });
const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port);

const org = await createOrganization(store, { name: `bench-sync-${Date.now()}`, credits: 1000 });
const username = `admin.${org.gid.slice(-8).toLowerCase()}@bench.example`;
const admin = await createUser(store, { orgGid: org.gid, username, role: ROLE.admin });
const { key } = await createApiKey(store, { username });

// Provisioned in bulk (one statement each), then every key signed as the API signs them.
const documents = Array.from({ length: agents }, (_, i) =>
  AgentSettingsDocument.parse({
    gaid: `RMP-AGENT-ID-BENCH${org.id}X${String(i).padStart(6, '0')}`,
    ts: Date.now(),
    score_threshold: 500,
    start_from: 0,
    version: 'v1.0.0',
    proxy: 'LOCAL',
    sync_time: 5,
    maximum_rules: 10_000,
  }),
);
await store.agents.registerMany(org.id, documents, username);
const rows = await store.agents.list(org.id, agents);
const records = rows.map((r) => ({ jti: randomBytes(16).toString('base64url'), agentId: r.id, issuedBy: admin.id, gaid: r.gaid }));
await store.agents.recordTokens(records);
const tokens = await Promise.all(records.map((r) => app.agentTokens.sign({ jti: r.jti, gaid: r.gaid, org: org.gid }, null)));

async function memory() {
  const metrics = await app.inject({ url: '/metrics' });
  const connections = Number(/^rampart_sync_connections (\d+)$/m.exec(metrics.body)?.[1] ?? -1);
  // Buffers freed by a GC are released by a background thread: collect until memory settles,
  // so that the start-up garbage (the geolocation data parsed at start) is not counted.
  let m = process.memoryUsage();
  for (let i = 0; i < 20; i++) {
    (globalThis as { gc?: () => void }).gc?.();
    await new Promise((r) => setTimeout(r, 250));
    const next = process.memoryUsage();
    const settled = Math.abs(next.rss - m.rss) < 1 << 20 && Math.abs(next.external - m.external) < 1 << 20;
    m = next;
    if (settled && i >= 2) break;
  }
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, connections };
}

process.on('message', (m: { type: string }) => {
  if (m.type === 'rss') void memory().then((mem) => process.send!({ type: 'rss', ...mem }));
  if (m.type === 'stop') void app.close().then(() => store.close()).then(() => process.exit(0));
});
process.send!({ type: 'ready', port, adminKey: key, tokens, store: store.connection.kind });
