// Child of bench/server-footprint.ts (run by `node --expose-gc`): where the server's resident
// memory goes, step by step, in one process as `npm start` runs it (the bundle, plain Node).
// Each figure is the RSS after a full collection, once the step is done:
//   node        Node itself, nothing imported;
//   code        the server bundle and its dependencies imported (dist/embed.mjs);
//   enrichment  the offline ASN, city and CDN data loaded and asked once (first use);
//   store       the store opened (PGlite on an existing data directory, or PostgreSQL) and migrated;
//   app         the app built, listening and ready (its IPv4 mirror loaded).
// Settings arrive as JSON in FOOTPRINT (databaseUrl or dataDir); the figures leave as one JSON line.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const { databaseUrl, dataDir } = JSON.parse(process.env.FOOTPRINT);
const rssMb = () => {
  globalThis.gc?.();
  globalThis.gc?.();
  return process.memoryUsage.rss() / 1048576;
};
const steps = { node: rssMb() };
const server = join(fileURLToPath(new URL('..', import.meta.url)), 'apps', 'server', 'dist', 'embed.mjs');
const { buildApp, createEnrichment, loadConfig, openStore } = await import(server);
steps.code = rssMb();
const config = { ...loadConfig(databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: dataDir }), logLevel: 'silent', demo: false };
const enrichment = createEnrichment({ dataDir: config.dataDir });
// First use of each part: a lazy loader pays here what an eager one paid at creation.
enrichment.asnOf('8.8.8.8');
enrichment.geoOf('8.8.8.8');
enrichment.cdnOf('8.8.8.8');
steps.enrichment = rssMb();
const store = await openStore({ databaseUrl, dataDir: config.dataDir, owner: 'server' });
steps.store = rssMb();
const app = await buildApp({ config, store });
await app.listen({ host: '127.0.0.1', port: 0 });
// Let the background work of a start (the IPv4 mirror's load) finish.
await new Promise((resolve) => setTimeout(resolve, 1500));
steps.app = rssMb();
await app.close();
await store.close();
process.stdout.write(`${JSON.stringify(steps)}\n`);
process.exit(0);
