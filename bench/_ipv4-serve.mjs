// The control plane of bench/ipv4.ts, lists.ts, lookups.ts and pg-ingest.ts, run by plain Node
// (no TypeScript loader, no benchmark client, no baseline in its process), so the server's
// resident memory and CPU are those of `npm start`: the bundle (apps/server/dist/embed.mjs) and
// nothing else. Settings arrive as JSON in BENCH_SERVE; the port and keys leave as one JSON line on
// stdout. Every baseline runs in a process of its own (nginx, bench/_nowork-server.mjs).
import { buildApp, createApiKey, createEnrichment, createUser, Ipv4Mirror, loadConfig, openStore } from '../apps/server/dist/embed.mjs';

const { url, orgGids, free, listCacheMb, listStreamsPerKey } = JSON.parse(process.env.BENCH_SERVE);
// The bench's addresses are spread over all of IPv4 (benchIp), special ranges included: a lab.
const config = { ...loadConfig({ DATABASE_URL: url, ALLOW_NON_PUBLIC_REPORTS: 'true', LIST_CACHE_MB: listCacheMb === undefined ? undefined : String(listCacheMb), LIST_STREAMS_PER_KEY: listStreamsPerKey === undefined ? undefined : String(listStreamsPerKey) }), logLevel: 'silent', demo: false, rateLimitPerMinute: 1_000_000_000, pgPoolMax: 20 };
// Diagnostics only: every request priced at 0 coins, to show what charging costs.
if (free) config.coinPrices = Object.fromEntries(Object.keys(config.coinPrices).map((k) => [k, 0]));
const store = await openStore({ databaseUrl: url, poolMax: config.pgPoolMax });
const stamp = Date.now();
const readers = [];
const contributors = [];
// A reader and a contributor key in each organization: many reporters and readers, as in the alliance.
for (const [o, orgGid] of orgGids.entries()) {
  for (const [role, list] of [[1, readers], [2, contributors]]) {
    const username = `b${stamp}-${o}-${role}@bench.example`;
    await createUser(store, { orgGid, username, role });
    list.push((await createApiKey(store, { username })).key);
  }
}
const ipv4Mirror = new Ipv4Mirror(store.ipv4Mirror, createEnrichment({ dataDir: config.dataDir }));
const app = await buildApp({ config, store, ipv4Mirror });
await app.listen({ host: '127.0.0.1', port: 0 });
// Lists are measured warm: the list mirror loads in the background at start (SQL until then).
await ipv4Mirror.start();
const port = (s) => s.server.address().port;
process.stdout.write(`${JSON.stringify({ app: port(app), readers, contributors })}\n`);
// A profiled server (BENCH_CPU_PROF) must exit normally on SIGTERM for Node to write its profile.
if (process.env.BENCH_CPU_PROF) process.on('SIGTERM', () => process.exit(0));
