// The overview's SQL over 100,000 IPv4 indicators: one organization's band snapshot (the rollup
// job, every 15 minutes per organization), the live-score histogram (every /overview view) and
// /overview/history (flush of a replica's counts + read of 30 days). Runs on PGlite, or on
// PostgreSQL when DATABASE_URL is set (the database is left as found: the rows it adds are
// deleted). `npx tsx bench/overview-rollups.ts`
import { loadavg } from 'node:os';
import { openStore } from '../apps/server/src/store/index.ts';
import { sqlOf } from '../apps/server/src/store/sql-handle.ts';
import { Rollups } from '../apps/server/src/services/operators/rollups.ts';
import { createOrganization } from '../apps/server/src/services/operators/admin.ts';

const INDICATORS = 100_000;
const store = await openStore(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : {});
const org = await createOrganization(store, { name: `Rollup bench ${Date.now()}`, credits: 0, trust: 0.5 });
const now = Math.floor(Date.now() / 1000);
const sql = sqlOf(store);
await sql.query(
  `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts)
   select 'RMP-RULE-GID-BENCH' || g, ('1.0.0.0'::inet + g)::cidr, false, 1 + (g % 1000), $1 - (g % 2592000), $1 - (g % 2592000)
   from generate_series(1, $2::int) g`,
  [now, INDICATORS],
);
const rollups = new Rollups(store, { warn: () => undefined });
const time = async (run: () => Promise<unknown>) => {
  const t = performance.now();
  await run();
  return Math.round(performance.now() - t);
};
try {
  for (let round = 1; round <= 2; round++) {
    const snapshot = await time(() => rollups.snapshotBands(now, org));
    const histogram = await time(() => store.overview.ipv4Histogram(now, null));
    for (let k = 0; k < 720; k++) rollups.countReports(org.id, 1, now - k * 3600);
    const history = await time(() => rollups.history(org, 30, now));
    console.log(`${store.connection.kind} round ${round}: band snapshot ${snapshot} ms, histogram ${histogram} ms, history ${history} ms (${INDICATORS} indicators; load ${loadavg()[0]!.toFixed(2)})`);
  }
} finally {
  await sql.query(`delete from ipv4_indicators where gid like 'RMP-RULE-GID-BENCH%'`);
  await sql.query('delete from organizations where id = $1', [org.id]);
  await store.close();
}
