/*
 * The server half of bench/push-bursts.ts: one control-plane process (embedded store unless
 * DATABASE_URL is set) with two organizations (the agent's, and another reporter). Tells its
 * parent the port and the keys over IPC. Started by bench/push-bursts.ts; not run alone.
 */
import { buildApp, openStore, seedOrg, testConfig } from '@rampart/server/testing';

const store = await openStore({ databaseUrl: process.env.DATABASE_URL });
const app = await buildApp({ config: testConfig({ rateLimitPerMinute: 10_000_000, authCacheSeconds: 300 }), store });
const port = Number(new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port);
const own = await seedOrg(store, { credits: 1_000_000_000, trust: 0.9 });
const other = await seedOrg(store, { credits: 1_000_000_000, trust: 0.5 });
process.send!({ port, own: own.keys, other: other.keys.contributor, store: process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite' });
process.on('disconnect', () => {
  void app.close().then(() => store.close()).finally(() => process.exit(0));
});
