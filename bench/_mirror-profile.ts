// Where the IPv4 mirror's initial load spends its CPU: this process's (decoding, AS and CDN
// facts, typed arrays) and its PostgreSQL backend's (packing the chunks), on an existing database:
//   DATABASE_URL=postgres://…/rampart_bench_scale_10000000 node --import tsx bench/_mirror-profile.ts [sql]
// `sql` only reads the chunks (no decoding). Add --cpu-prof before --import for a profile.
import { readFileSync } from 'node:fs';
import { openStore } from '../apps/server/src/store/index.ts';
import { createEnrichment } from '../apps/server/src/services/enrichment/enrichment.ts';
import { MirrorFacts } from '../apps/server/src/services/ipv4/mirror/facts.ts';
import { loadTables } from '../apps/server/src/services/ipv4/mirror/loader.ts';
import { sqlOf } from '../apps/server/src/store/sql-handle.ts';
const store = await openStore({ databaseUrl: process.env.DATABASE_URL!, poolMax: 1 });
const pid = (await sqlOf(store).query<{ p: number }>('select pg_backend_pid() as p')).rows[0]!.p;
const pgCpu = () => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
const rows = store.ipv4Mirror;
const enrichment = createEnrichment({});
enrichment.asnOfNumber(1); enrichment.cdnOfNumber(1);
if (process.argv[2] === 'sql') {
  const t0 = performance.now(); const c0 = pgCpu();
  let after = 0; for (;;) { const c = await rows.chunk(after, 16384); if (c.count < 16384) break; after = c.last!; }
  console.log(JSON.stringify({ sqlOnlyMs: Math.round(performance.now() - t0), pgCpuMs: pgCpu() - c0 }));
} else {
  const t0 = performance.now(); const c0 = pgCpu(); const u0 = process.cpuUsage();
  const t = await loadTables(rows, new MirrorFacts(enrichment), () => false);
  const u = process.cpuUsage(u0);
  console.log(JSON.stringify({ rows: t!.cols.n, totalMs: Math.round(performance.now() - t0), nodeCpuMs: Math.round((u.user + u.system) / 1000), pgCpuMs: pgCpu() - c0 }));
}
await store.close();
