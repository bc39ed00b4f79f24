import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { formatIpv4, OrganizationConfig, parseIpv4 } from '@rampart/contracts';
import { buildApp } from '../src/app.ts';
import { testConfig } from '../src/config.ts';
import type { Ipv4Mirror } from '../src/services/ipv4/mirror/index.ts';
import type { Ipv4Row, Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, startMirrorApp, type TestOrg } from './support/app.ts';

/*
 * `GET /ips/{ipv4}` answered from the in-process mirror must be byte for byte what the SQL path
 * answers for the same state: over random records (nested networks from /8 to /32, decayed and
 * fresh scores, anchors of the caller's organization and of another, sources, notes, tags,
 * ip_info with extra keys or none), the caller's decisions (-1, 0, 1, with a ttl past, future or
 * none, nested), reserved ranges, blocking rules with tags and delays; then again after rows
 * change, leave and arrive (the details the mirror keeps must follow), with and without `full`.
 * Also the freshness rule (Ipv4Mirror.freshForLookup): a write straight to SQL (another replica)
 * shows from the next second on, a write this replica acknowledged at once, and a clock set back
 * does not leave look-ups on an old catch-up.
 */

const RUNS = Number(process.env.LOOKUP_MIRROR_RUNS ?? 40);
const SEED = Number(process.env.LOOKUP_MIRROR_SEED ?? 20261127);
const WORDS = ['ssh', 'waf', 'scan', 'smtp'] as const;
/** One public /16: networks from /8 to /32 nest in it often. */
const BASE = parseIpv4('45.77.0.0')!.start;
const LENS = [32, 32, 32, 32, 31, 30, 28, 24, 20, 16, 12, 8];

const network = (lens: number[]) =>
  fc.record({ offset: fc.integer({ min: 0, max: 2047 }), len: fc.constantFrom(...lens) }).map(({ offset, len }) => {
    const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
    return `${formatIpv4(((BASE + offset) & mask) >>> 0)}/${len}`;
  });

const ipInfo = fc.oneof(
  fc.constant(null),
  fc.constant({}),
  fc.record({ as_name: fc.constantFrom('Edge "West", Inc.', 'AS-1'), asn: fc.constantFrom('AS64501', ''), country: fc.constantFrom('DE', 'US'), extra: fc.constant('kept in storage only') }, { requiredKeys: [] }),
);

interface Indicator {
  network: string;
  score: number;
  age: number;
  entryAge: number;
  members: number;
  events: number;
  tags: string[];
  sources: string[];
  notes: string[];
  ipInfo: Record<string, string> | null;
  anchor: { after: number; score: number } | null;
  foreignAnchor: boolean;
}

const indicator: fc.Arbitrary<Indicator> = fc.record({
  network: network(LENS),
  score: fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.constantFrom(1, 1000)),
  age: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 40 * 86_400 }) }, { weight: 1, arbitrary: fc.integer({ min: -86_400, max: -1 }) }, { weight: 1, arbitrary: fc.constantFrom(0, 3_600) }),
  entryAge: fc.integer({ min: 0, max: 90 * 86_400 }),
  members: fc.integer({ min: 0, max: 50 }),
  events: fc.integer({ min: 0, max: 5_000 }),
  tags: fc.subarray([...WORDS], { maxLength: 2 }),
  sources: fc.subarray([...WORDS], { maxLength: 3 }),
  notes: fc.array(fc.constantFrom('seen twice', 'a "quoted" note', 'ünïcode'), { maxLength: 2 }),
  ipInfo,
  anchor: fc.option(fc.record({ after: fc.integer({ min: -3_600, max: 20 * 86_400 }), score: fc.integer({ min: 1, max: 1000 }) }), { freq: 3 }),
  foreignAnchor: fc.boolean(),
});

interface Decision {
  network: string;
  decision: -1 | 0 | 1;
  ttlIn: number | null;
  foreign: boolean;
}

const decision: fc.Arbitrary<Decision> = fc.record({
  network: network([32, 30, 28, 24, 20, 16]),
  decision: fc.constantFrom(-1 as const, 0 as const, 1 as const),
  ttlIn: fc.option(fc.integer({ min: -86_400, max: 30 * 86_400 }), { freq: 2 }),
  foreign: fc.boolean(),
});

/** What changes between the two comparisons of a scenario. */
interface Change {
  /** Index (mod the indicators) and what happens to it. */
  at: number;
  kind: 'sources' | 'notes' | 'ip_info' | 'report' | 'delete';
}

interface Scenario {
  indicators: Indicator[];
  decisions: Decision[];
  reserved: string[];
  rule: { score: number; tags: string[] } | null;
  delay: number;
  /** Addresses looked up, as offsets in the /16. */
  probes: number[];
  changes: Change[];
  added: Indicator[];
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  indicators: fc.uniqueArray(indicator, { maxLength: 30, selector: (i) => i.network }),
  decisions: fc.uniqueArray(decision, { maxLength: 10, selector: (d) => `${d.foreign}:${d.network}` }),
  reserved: fc.subarray(['45.77.0.0/30', '45.77.2.128/25', '45.77.4.7/32']),
  rule: fc.option(fc.record({ score: fc.integer({ min: 1, max: 1000 }), tags: fc.subarray([...WORDS], { minLength: 1, maxLength: 2 }) }), { freq: 3 }),
  delay: fc.constantFrom(0, 0, 0, 3_600),
  probes: fc.array(fc.integer({ min: 0, max: 2047 }), { minLength: 1, maxLength: 6 }),
  changes: fc.array(fc.record({ at: fc.nat(), kind: fc.constantFrom('sources' as const, 'notes' as const, 'ip_info' as const, 'report' as const, 'delete' as const) }), { maxLength: 4 }),
  added: fc.array(indicator, { maxLength: 2 }),
});

describe.each(driverCases())('GET /ips/{ipv4} from the mirror equals SQL, on $name', (driver) => {
  let store: Store;
  let sqlApp: FastifyInstance;
  let mirrorApp: FastifyInstance;
  let mirror: Ipv4Mirror;
  let acme: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    const config = testConfig({ authCacheSeconds: 0, allowNonPublicReports: true });
    sqlApp = await buildApp({ config, store, ipv4Mirror: null });
    await sqlApp.ready();
    acme = await seedOrg(store, { credits: 1_000_000_000 });
    other = await seedOrg(store, { credits: 1_000_000_000 });
    ({ app: mirrorApp, mirror } = await startMirrorApp(store, config));
    expect(mirror.ready).toBe(true);
  }, 60_000);
  afterAll(async () => {
    await mirrorApp.close();
    await sqlApp.close();
    mirror.close();
    await store.close();
  });

  async function insertIndicators(list: Indicator[], now: number): Promise<number[]> {
    const db = sqlOf(store);
    const ids: number[] = [];
    for (const i of list) {
      const res = await db.query<{ id: number }>(
        `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events, tags, sources, notes, ip_info)
         values ('RMP-RULE-GID-L' || nextval('ipv4_indicators_id_seq'), $1::cidr, masklen($1::cidr) < 32, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb)
         on conflict (network) do nothing returning id`,
        [i.network, i.score, now - i.age, now - i.entryAge, i.members, i.events, i.tags, i.sources, i.notes, i.ipInfo === null ? null : JSON.stringify(i.ipInfo)],
      );
      const id = res.rows[0] ? Number(res.rows[0].id) : null;
      if (id === null) continue;
      ids.push(id);
      if (i.anchor) await db.query('insert into ipv4_org_anchors (org_id, indicator_id, ts, score) values ($1, $2, $3, $4)', [acme.org.id, id, now - i.age + i.anchor.after, i.anchor.score]);
      if (i.foreignAnchor) await db.query('insert into ipv4_org_anchors (org_id, indicator_id, ts, score) values ($1, $2, $3, 1000)', [other.org.id, id, now - i.age + 86_400]);
    }
    return ids;
  }

  /** Replaces the records, anchors, decisions and settings with the scenario's (as another replica would). */
  async function seed(s: Scenario, now: number): Promise<number[]> {
    const db = sqlOf(store);
    await db.query('delete from ipv4_decisions');
    await db.query('delete from ipv4_indicators');
    const ids = await insertIndicators(s.indicators, now);
    for (const d of s.decisions) {
      await db.query('insert into ipv4_decisions (org_id, network, decision, ttl) values ($1, $2::cidr, $3, $4)', [d.foreign ? other.org.id : acme.org.id, d.network, d.decision, d.ttlIn === null ? null : now + d.ttlIn]);
    }
    await store.settings.replaceOrganization(acme.org.id, () => OrganizationConfig.parse({ reserved_ips: s.reserved, blocking_roule: s.rule ?? undefined }), 'test');
    await db.query('update organizations set delay = $1 where id = $2', [String(s.delay), acme.org.id]);
    return ids;
  }

  async function change(s: Scenario, ids: number[], now: number): Promise<void> {
    const db = sqlOf(store);
    for (const c of s.changes) {
      if (ids.length === 0) break;
      const id = ids[c.at % ids.length]!;
      if (c.kind === 'sources') await db.query(`update ipv4_indicators set sources = array['changed'] || sources where id = $1`, [id]);
      if (c.kind === 'notes') await db.query(`update ipv4_indicators set notes = array['a new note'] where id = $1`, [id]);
      if (c.kind === 'ip_info') await db.query(`update ipv4_indicators set ip_info = '{"as_name":"Moved","asn":"AS64999","country":"FR"}' where id = $1`, [id]);
      if (c.kind === 'report') await db.query('update ipv4_indicators set score = 777, ts = $2, members = members + 1, events = events + 3 where id = $1', [id, now - 5]);
      if (c.kind === 'delete') await db.query('delete from ipv4_indicators where id = $1', [id]);
    }
    await insertIndicators(s.added, now);
  }

  /** Every probe, with and without `full`, on both apps at one instant: equal status and bytes. */
  async function compare(s: Scenario, answered: Array<Ipv4Row[] | null>): Promise<number> {
    let records = 0;
    for (const offset of s.probes) {
      for (const query of ['', '?full=yes']) {
        const url = `/api/v1/ips/${formatIpv4(BASE + offset)}${query}`;
        const headers = { authorization: acme.keys.reader };
        const before = answered.length;
        const fromMirror = await mirrorApp.inject({ url, headers });
        const fromSql = await sqlApp.inject({ url, headers });
        expect(fromMirror.statusCode).toBe(200);
        expect(fromMirror.body).toBe(fromSql.body);
        // The mirror answered (null would mean it handed the look-up to SQL), unless one of the
        // organization's decisions on a value nobody reported covers the address: that record is SQL's (migration 0017).
        expect(answered.length).toBe(before + 1);
        if (answered.at(-1) === null) {
          const unheld = await sqlOf(store).query(
            `select 1 from ipv4_decisions d where d.org_id = $1 and d.decision in (0, 1) and d.network >>= $2::cidr
             and not exists (select 1 from ipv4_indicators h where h.network = d.network)`,
            [acme.org.id, `${formatIpv4(BASE + offset)}/32`],
          );
          expect(unheld.rows.length, 'mirror handed over without a decision record covering the address').toBeGreaterThan(0);
        }
        records += (fromMirror.json() as { body: unknown[] }).body.length;
      }
    }
    return records;
  }

  it(`answers byte for byte as SQL over ${RUNS} random scenarios, before and after changes`, async () => {
    const answered: Array<Ipv4Row[] | null> = [];
    const holding = mirror.holding.bind(mirror);
    const spy = vi.spyOn(mirror, 'holding').mockImplementation(async (orgId, addr) => {
      const rows = await holding(orgId, addr);
      answered.push(rows);
      return rows;
    });
    let records = 0;
    let probes = 0;
    try {
      await fc.assert(
        fc.asyncProperty(scenario, async (s) => {
          const now = Math.floor(Date.now() / 1000);
          const ids = await seed(s, now);
          // Written straight to SQL: this replica's write note makes the next look-up catch up.
          mirror.noteWrite();
          vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
          try {
            records += await compare(s, answered);
            await change(s, ids, now);
            mirror.noteWrite();
            records += await compare(s, answered);
            probes += 4 * s.probes.length;
          } finally {
            vi.useRealTimers();
          }
        }),
        { numRuns: RUNS, seed: SEED },
      );
    } finally {
      spy.mockRestore();
    }
    // The scenarios found records (not only empty answers).
    expect(probes).toBeGreaterThan(RUNS);
    expect(records).toBeGreaterThan(probes / 4);
  }, 240_000);

  it('does not keep detail columns read across a catch-up that changed rows: they may be older than it', async () => {
    const db = sqlOf(store);
    // The scenarios' decisions go too: on values no longer held they are records of their own (migration 0017).
    await db.query('delete from ipv4_decisions');
    await db.query('delete from ipv4_indicators');
    await store.settings.replaceOrganization(acme.org.id, () => OrganizationConfig.parse({ reserved_ips: [] }), 'test');
    await db.query(`update organizations set delay = '0' where id = $1`, [acme.org.id]);
    const now = Math.floor(Date.now() / 1000);
    await db.query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, notes) values ('RMP-RULE-GID-RACE', '45.77.10.1/32', false, 500, $1, $1, '{before}')`, [now]);
    mirror.noteWrite();
    const notes = async () =>
      ((await mirrorApp.inject({ url: '/api/v1/ips/45.77.10.1?full=yes', headers: { authorization: acme.keys.reader } })).json() as { body: Array<{ info: { notes: string[] } }> }).body.map((r) => r.info.notes);
    const details = store.ipv4Mirror.details;
    // The first read of the row's details sees it before a change that a catch-up applies while the read is out.
    const spy = vi.spyOn(store.ipv4Mirror, 'details').mockImplementationOnce(async (ids) => {
      const read = await details(ids);
      await db.query(`update ipv4_indicators set notes = '{after}' where network = '45.77.10.1/32'`);
      mirror.noteWrite();
      await mirror.catchUp();
      return read;
    });
    try {
      expect(await notes()).toEqual([['before']]);
      // Not kept: the next look-up reads them anew.
      expect(await notes()).toEqual([['after']]);
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });

  it('shows a write straight to SQL from the next second on, and a write of this replica at once', async () => {
    const db = sqlOf(store);
    // The scenarios' decisions go too: on values no longer held they are records of their own (migration 0017).
    await db.query('delete from ipv4_decisions');
    await db.query('delete from ipv4_indicators');
    await store.settings.replaceOrganization(acme.org.id, () => OrganizationConfig.parse({ reserved_ips: [] }), 'test');
    await db.query(`update organizations set delay = '0' where id = $1`, [acme.org.id]);
    const second = (Math.floor(Date.now() / 1000) + 1) * 1000;
    vi.useFakeTimers({ toFake: ['Date'], now: second + 100 });
    try {
      const count = async (ip: string, app = mirrorApp) => ((await app.inject({ url: `/api/v1/ips/${ip}`, headers: { authorization: acme.keys.reader } })).json() as { body: unknown[] }).body.length;
      // A look-up in this second: the mirror has caught up within it.
      expect(await count('45.77.9.1')).toBe(0);
      // Another replica writes: SQL shows it at once, the mirror within the settled second.
      await db.query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ('RMP-RULE-GID-FRESH', '45.77.9.1/32', false, 500, $1, $1)`, [second / 1000]);
      vi.setSystemTime(second + 900);
      expect(await count('45.77.9.1', sqlApp)).toBe(1);
      expect(await count('45.77.9.1')).toBe(0);
      vi.setSystemTime(second + 1000);
      expect(await count('45.77.9.1')).toBe(1);
      // A report this replica acknowledged: the next look-up (same second, any caller) sees it.
      const report = await mirrorApp.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: acme.keys.contributor }, payload: { ip: '45.77.9.2', confidence: 0.9, source: 'ssh' } });
      expect(report.statusCode).toBeLessThan(300);
      expect(await count('45.77.9.2')).toBe(1);
      const seen = await mirrorApp.inject({ url: '/api/v1/ips/45.77.9.2', headers: { authorization: other.keys.reader } });
      expect((seen.json() as { body: Array<{ ip: string }> }).body.map((r) => r.ip)).toEqual(['45.77.9.2']);
      // The clock set back a minute: the catch-up "from the future" does not count, the next look-up catches up.
      vi.setSystemTime(second - 60_000);
      await db.query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ('RMP-RULE-GID-BACK', '45.77.9.3/32', false, 500, $1, $1)`, [second / 1000 - 60]);
      expect(await count('45.77.9.3')).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
