// Child process of bench/pglite-ingest.ts, run by plain Node: the control plane from its bundle
// (apps/server/dist/embed.mjs) on the embedded store in a data directory, as `npm start` opens it
// (durable: fsync on every commit; `durable: false` opens it as PGlite ships, the baseline), with
// one organization and contributor key per client connection. Settings arrive as JSON in
// BENCH_SERVE ({ dataDir, keys, durable }); the port and keys leave
// as one JSON line on stdout once a report per key has warmed it (enrichment tables, key cache).
import { buildApp, createApiKey, createOrganization, createUser, loadConfig, openStore } from '../apps/server/dist/embed.mjs';

const { dataDir, keys: count, durable = true } = JSON.parse(process.env.BENCH_SERVE);
const config = { ...loadConfig({ DATA_DIR: dataDir, ALLOW_NON_PUBLIC_REPORTS: 'true' }), logLevel: 'silent', demo: false, rateLimitPerMinute: 1_000_000_000 };
const store = await openStore({ dataDir, durable });
const keys = [];
for (let o = 0; o < count; o += 1) {
  const org = await createOrganization(store, { name: `Bench ${o}`, credits: 1_000_000_000, trust: 0.7 });
  const username = `c${o}@bench.example`;
  await createUser(store, { orgGid: org.gid, username, role: 2 });
  keys.push((await createApiKey(store, { username })).key);
}
const app = await buildApp({ config, store });
await app.listen({ host: '127.0.0.1', port: 0 });
for (const [k, key] of keys.entries()) {
  const res = await app.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: key }, payload: { ip: `11.0.0.${k + 1}`, confidence: 0.7, source: 'ssh' } });
  if (res.statusCode >= 300) throw new Error(`warm-up report: ${res.statusCode} ${res.body}`);
}
process.stdout.write(`${JSON.stringify({ port: app.server.address().port, keys })}\n`);
process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => store.close())
    .then(() => process.exit(0));
});
