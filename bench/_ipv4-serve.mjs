// Child process of bench/ipv4.ts, run by plain Node (no TypeScript loader, no benchmark client
// loaded), so the server's resident memory is that of `npm start`: the control plane from its
// bundle (apps/server/dist/embed.mjs), a constant fastify route and the static files the lists
// are compared with. Settings arrive as JSON in BENCH_SERVE; the ports and keys leave as one JSON
// line on stdout.
import { createReadStream, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
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
const staticDir = mkdtempSync(join(tmpdir(), 'rampart-bench-ipv4-'));
// A look-up's own answer (status, body, headers), served by the constant server for every
// look-up path: the most any look-up implementation could do under this client (the ceiling row).
const firstOrg = await store.orgs.byGid(orgGids[0]);
const [{ network }] = await store.ipv4.feedPage(firstOrg.id, 0, 1, 0);
const sample = await app.inject({ method: 'GET', url: `/api/v1/ips/${network.replace(/\/32$/, '')}`, headers: { authorization: readers[0] } });
const sampleHeaders = Object.fromEntries(
  Object.entries(sample.headers).filter(([name]) => !['connection', 'keep-alive', 'date', 'content-length', 'transfer-encoding'].includes(name)),
);
const constant = Fastify();
constant.get('/const', async () => ({ ok: true }));
constant.get('/api/v1/ips/:ip', (_request, reply) => {
  reply.code(sample.statusCode).headers(sampleHeaders).send(sample.body);
});
constant.get('/static/:name', (request, reply) => {
  const path = join(staticDir, request.params.name.replaceAll(/[^\w.-]/g, ''));
  reply.type('text/plain; charset=utf-8').header('content-length', statSync(path).size).send(createReadStream(path));
});
await constant.listen({ host: '127.0.0.1', port: 0 });
const port = (s) => s.server.address().port;
process.stdout.write(`${JSON.stringify({ app: port(app), constant: port(constant), readers, contributors, staticDir })}\n`);
// A profiled server (BENCH_CPU_PROF) must exit normally on SIGTERM for Node to write its profile.
if (process.env.BENCH_CPU_PROF) process.on('SIGTERM', () => process.exit(0));
