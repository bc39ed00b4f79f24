/*
 * Seeded generator for the IPv4 benchmark: N indicators (default 1,000,000) reported by many
 * organizations, loaded server-side (generate_series) into its own PostgreSQL database, which
 * is kept between runs (`--fresh` regenerates).
 *
 * Deterministic: indicator g (1..N) has address (g × 2654435761) mod 2^32 (a bijection, so no
 * two collide), 1 + g mod 3 reports from organizations (g × 7 + j) mod ORGS, and ts spread over
 * the last five days. Scores are v3.2 of those reports, computed in SQL with the formula of
 * packages/scoring (checked against scoreV32 on a sample at the end).
 *
 *   npx tsx bench/gen-ipv4.ts [--n 1000000] [--fresh]
 *   BENCH_DB_PREFIX names the database (default rampart_bench_ipv4_, followed by N).
 */
import pg from 'pg';
import { scoreV32 } from '@rampart/scoring';

export const BENCH_ORGS = 200;
const MULT = 2_654_435_761;

/** Address of indicator g, as the generator writes it. */
export function benchIp(g: number): string {
  const n = Number((BigInt(g) * BigInt(MULT)) % 4_294_967_296n);
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

export function benchDbUrl(serverUrl: string, n: number): { url: string; name: string } {
  // BENCH_DB_PREFIX: a database of one's own, when several people bench on one PostgreSQL server.
  const prefix = process.env.BENCH_DB_PREFIX ?? 'rampart_bench_ipv4_';
  if (!/^[a-z_][a-z0-9_]*$/.test(prefix)) throw new Error(`BENCH_DB_PREFIX ${prefix} is not a plain lower-case identifier`);
  const name = `${prefix}${n}`;
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), name };
}

export async function generateIpv4(serverUrl: string, n: number, fresh: boolean): Promise<string> {
  const { url, name } = benchDbUrl(serverUrl, n);
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  const exists = (await admin.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1;
  if (exists && !fresh) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const done = (await c.query("select count(*)::int as n from pg_tables where tablename = 'bench_done'")).rows[0].n === 1;
    await c.end();
    if (done) {
      await admin.end();
      console.log(`reusing ${name} (generated earlier; --fresh regenerates)`);
      return url;
    }
  }
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  await admin.end();
  const { openStore } = await import('../apps/server/src/store/index.ts');
  const store = await openStore({ databaseUrl: url });
  await store.close();

  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const t0 = performance.now();
  const now = Math.floor(Date.now() / 1000);
  await c.query(
    `insert into organizations (gid, name, trust, credit_tokens)
     select 'RMP-GID-BENCH' || o, 'bench-org-' || o, 0.3 + (o % 8) / 10.0, 1000000000000 from generate_series(0, $1::int - 1) o`,
    [BENCH_ORGS],
  );
  // Indexes once after the load: cheaper than maintaining them row by row.
  await c.query('drop index ipv4_indicators_feed_idx, ipv4_indicators_network_idx');
  await c.query('alter table ipv4_reports drop constraint ipv4_reports_pkey');
  const step = 250_000;
  for (let from = 1; from <= n; from += step) {
    const to = Math.min(n, from + step - 1);
    await c.query(
      `insert into ipv4_indicators (id, gid, network, is_network, score, ts, entry_ts, members, events, sources)
       select g, 'RMP-RULE-GID-BENCH' || g, ('0.0.0.0'::inet + ((g::bigint * ${MULT}) % 4294967296))::cidr, false, 1,
              $3::bigint - (g::bigint * 37) % 432000, $3::bigint - (g::bigint * 37) % 432000 - 3600, 1 + g % 3, 0, array['bench']
       from generate_series($1::int, $2::int) g`,
      [from, to, now],
    );
    await c.query(
      `insert into ipv4_reports (indicator_id, org_id, confidence, events, first_ts, last_ts, sources)
       select g, o.id, 0.5 + ((g + j) % 6) / 10.0, 1 + (g + j) % 4, $3, $3, array['bench']
       from generate_series($1::int, $2::int) g
       cross join lateral generate_series(0, g % 3) j
       join organizations o on o.gid = 'RMP-GID-BENCH' || ((g::bigint * 7 + j) % ${BENCH_ORGS})`,
      [from, to, now],
    );
    process.stdout.write(`indicators ${to.toLocaleString('en')} / ${n.toLocaleString('en')}\r`);
  }
  await c.query(`select setval('ipv4_indicators_id_seq', $1::bigint)`, [n]);
  await c.query('alter table ipv4_reports add primary key (indicator_id, org_id)');
  // v3.2 (packages/scoring/README.md): base = trust × confidence; repeat = base × min(0.125 log2 events, 0.5),
  // each rounded to millionths; s0 = clamp(round(1000 (1 − exp(−W / 7))), 1, 1000).
  await c.query(
    `update ipv4_indicators i set score = s.s0, events = s.events
     from (
       select r.indicator_id,
              least(1000, greatest(1, round(1000 * (1 - exp(-(sum(round((o.trust * r.confidence) * 1e6)) + sum(round((o.trust * r.confidence) * least(0.125 * log(2, r.events::numeric), 0.5) * 1e6))) / 1e6 / 7)))))::int as s0,
              sum(r.events)::int as events
       from ipv4_reports r join organizations o on o.id = r.org_id group by r.indicator_id
     ) s
     where s.indicator_id = i.id`,
  );
  await c.query('create index ipv4_indicators_feed_idx on ipv4_indicators (ts, id)');
  await c.query('create index ipv4_indicators_network_idx on ipv4_indicators using gist (network inet_ops)');
  await c.query('update feed_clock set ts = $1 where id = 1', [now]);
  await c.query('vacuum analyze');

  // The SQL score must be the package's: compare a sample.
  const sample = await c.query<{ id: number; score: number; aggs: Array<{ trust: number; confidence: number; events: number }> }>(
    `select i.id, i.score, json_agg(json_build_object('trust', o.trust, 'confidence', r.confidence, 'events', r.events)) as aggs
     from ipv4_indicators i join ipv4_reports r on r.indicator_id = i.id join organizations o on o.id = r.org_id
     where i.id <= 200 group by i.id, i.score`,
  );
  for (const row of sample.rows) {
    const expected = scoreV32(row.aggs.map((a) => ({ orgTrust: a.trust, confidence: a.confidence, events: a.events }))).s0;
    if (expected !== row.score) throw new Error(`generator score of indicator ${row.id} is ${row.score}, scoreV32 says ${expected}`);
  }
  await c.query('create table bench_done (at timestamptz default now())');
  await c.end();
  console.log(`\ngenerated ${n.toLocaleString('en')} IPv4 indicators from ${BENCH_ORGS} organizations in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return url;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const flag = (k: string, d: number) => (args.includes(`--${k}`) ? Number(args[args.indexOf(`--${k}`) + 1]) : d);
  await generateIpv4(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', flag('n', 1_000_000), args.includes('--fresh'));
}
