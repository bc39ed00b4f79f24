import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { DryRunFollower } from '@rampart/agent/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OrganizationConfig, parseIpv4 } from '@rampart/contracts';
import { buildApp } from '../src/app.ts';
import { testConfig } from '../src/config.ts';
import { eventBus } from '../src/services/events.ts';
import type { Ipv4Mirror } from '../src/services/ipv4/mirror/index.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, type TestOrg, startMirrorApp } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

/*
 * The feed's promise to existing clients (decisions.md, Compatibility), checked the way such a
 * client works: a reference follower written from the documented protocol alone walks `/ips`
 * from 0 and then from its cursor, keeps records by gid, and decides with `header.eval`:
 * decision 0 never blocks, decision 1 blocks until ttl, otherwise live score >= threshold.
 * After random sequences of reports by three organizations, decisions with and without ttl
 * (on reported values and on values nobody reports, which are records of their organization),
 * clears, reserved-range and blocking-rule changes and clock jumps of minutes to weeks, its
 * blocked set for each organization and threshold must equal `/ipv4/{threshold}` for that
 * organization, read through SQL and through the in-process mirror.
 *
 * A third party follows the same server: each organization's agent, run by the agent's own sync
 * code (full or incremental syncs, decisions pushed as the sync channel pushes them) with the
 * dry-run enforcer. After every sync and at the end of every sequence, what its enforcer holds must
 * equal the reference follower's blocked set at the agent's threshold.
 *
 * The clock is injected (Date only). On PostgreSQL record `ts` come from the server's clock, so a
 * jump moves the instant every reader evaluates at (decay, ttl expiry); on PGlite the database's
 * clock is the process's Date, so records are written at the jumped seconds too.
 */

/** The real timer, taken before any test fakes the clock. */
const realSetTimeout = globalThis.setTimeout;
const pause = (ms: number) => new Promise((r) => realSetTimeout(r, ms));

const TARGETS = ['45.77.1.2', '45.77.1.3', '45.77.1.0/24', '45.77.9.9', '45.77.0.0/16', '81.2.69.160', '81.2.69.0/28'] as const;
/** Values nobody ever reports: decisions on them are records of their organization alone (decisions.md, Organizations). */
const UNREPORTED = ['45.78.3.3', '45.78.3.0/24', '81.2.70.16/28', '45.78.3.4'] as const;
const SOURCES = ['ssh', 'waf', 'scan'] as const;
const THRESHOLDS = [1, 60, 110, 200] as const;
/** The agents' score_threshold. */
const AGENT_THRESHOLD = 60;
const RANGES = ['45.77.1.0/30', '81.2.69.0/24', '45.77.9.0/24', '45.78.3.0/30'] as const;

type Op =
  | { op: 'report'; org: number; target: string; confidence: number; source: string }
  | { op: 'decide' | 'decideOnly'; org: number; target: string; decision: -1 | 0 | 1; ttlHours: number | null }
  | { op: 'reserve'; org: number; ranges: string[] }
  | { op: 'rule'; org: number; rule: { score: number; tags: string[] } | null }
  | { op: 'jump'; seconds: number }
  | { op: 'sync'; org: number; full: boolean };

const org = fc.integer({ min: 0, max: 2 });
const target = fc.constantFrom(...TARGETS);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('report' as const), org, target, confidence: fc.constantFrom(0.2, 0.6, 1), source: fc.constantFrom(...SOURCES) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('decide' as const),
      org,
      target,
      decision: fc.constantFrom(-1 as const, 0 as const, 1 as const),
      ttlHours: fc.option(fc.integer({ min: 1, max: 24 * 14 }), { nil: null }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('decideOnly' as const),
      org,
      target: fc.constantFrom(...UNREPORTED),
      decision: fc.constantFrom(-1 as const, 0 as const, 1 as const, 1 as const),
      ttlHours: fc.option(fc.integer({ min: 1, max: 24 * 14 }), { nil: null }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reserve' as const), org, ranges: fc.subarray([...RANGES]) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('rule' as const),
      org,
      rule: fc.option(fc.record({ score: fc.constantFrom(20, 80, 130), tags: fc.subarray([...SOURCES], { minLength: 1 }) }), { nil: null }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('jump' as const), seconds: fc.constantFrom(90, 3_600, 86_400, 7 * 86_400, 21 * 86_400) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('sync' as const), org, full: fc.boolean() }) },
);

interface FollowedRecord {
  ip: string;
  ts: number;
  score: number;
  decision: number | null;
  ttl: number | null;
}

/** What an existing client keeps: records by gid, its cursor, and the header's decay function. */
class ReferenceFollower {
  readonly records = new Map<string, FollowedRecord>();
  cursor = 0;
  private evaluate: ((s0: number, elapsed: number) => number) | null = null;

  constructor(
    private readonly app: FastifyInstance,
    private readonly key: string,
  ) {}

  async walk(): Promise<void> {
    for (let pages = 0; pages < 1000; pages++) {
      const res = await this.app.inject({ url: `/api/v1/ips?ts=${this.cursor}&page_size=1000`, headers: { authorization: this.key } });
      expect(res.statusCode).toBe(200);
      const page = res.json() as { header: { next_ts: number; eval: string }; body: Array<FollowedRecord & { gid: string }> };
      this.evaluate ??= new Function('scoreTimeZero', 'current_time', page.header.eval) as (s0: number, elapsed: number) => number;
      if (page.body.length === 0) return;
      for (const r of page.body) this.records.set(r.gid, { ip: r.ip, ts: r.ts, score: r.score, decision: r.decision, ttl: r.ttl });
      this.cursor = page.header.next_ts;
    }
    throw new Error('the feed never ended');
  }

  blocked(threshold: number, now: number): string[] {
    const out: string[] = [];
    for (const r of this.records.values()) {
      if (r.decision === 0) continue;
      if (r.decision === 1 && (r.ttl === null || r.ttl > now)) out.push(r.ip);
      else if (this.evaluate!(r.score, now - r.ts) >= threshold) out.push(r.ip);
    }
    return out.sort();
  }
}

describe.each(driverCases())('a reference follower of /ips agrees with /ipv4 on $name', (driver) => {
  let store: Store;
  let sqlApp: FastifyInstance;
  let mirrorApp: FastifyInstance;
  let mirror: Ipv4Mirror;
  let orgs: TestOrg[];
  /** Runs and operations performed, for the note. */
  const counts = { runs: 0, ops: 0, comparisons: 0, agentComparisons: 0, agentNonEmpty: 0 };
  let started = 0;
  let baseUrl = '';
  let dir = '';
  /** This run's agents by organization id, and the decisions pushed to them, in order. */
  const agents = new Map<number, DryRunFollower>();
  let pushes: Promise<unknown> = Promise.resolve();
  let marks = 0;
  let seenMark = 0;
  let stopListening: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    store = await driver.open();
    const config = testConfig({ authCacheSeconds: 0, rateLimitPerMinute: 1_000_000 });
    sqlApp = await buildApp({ config, store, ipv4Mirror: null });
    await sqlApp.listen({ host: '127.0.0.1', port: 0 });
    baseUrl = `http://127.0.0.1:${(sqlApp.server.address() as AddressInfo).port}/api/v1`;
    ({ app: mirrorApp, mirror } = await startMirrorApp(store, config));
    dir = await mkdtemp(join(tmpdir(), 'ipv4-follower-'));
    // The sync channel's pushes (sync/hub.ts forwards decision_changed to the organization's agents).
    stopListening = await eventBus(store.connection).subscribe((event) => {
      if (event.type === 'feed_changed' && event.org_id === -1) seenMark = Math.max(seenMark, event.ts);
      if (event.type !== 'decision_changed' || event.kind !== 'ipv4') return;
      const agent = agents.get(event.org_id);
      if (agent) pushes = pushes.then(() => agent.decision('ipv4', event.indicator, event.decision, event.ttl, event.ts));
    });
  }, 60_000);
  afterAll(async () => {
    vi.useRealTimers();
    console.log(
      `feed follower property on ${driver.name}: ${counts.runs} runs, ${counts.ops} operations, ${counts.comparisons} list comparisons, ${counts.agentComparisons} agent comparisons (${counts.agentNonEmpty} non-empty), ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    await stopListening?.();
    await mirrorApp.close();
    await sqlApp.close();
    mirror.close();
    await store.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Until every decision published so far has reached the agents: a mark sent after them comes back after them. */
  async function drainPushes(): Promise<void> {
    const mark = ++marks;
    await eventBus(store.connection).publish({ type: 'feed_changed', org_id: -1, kind: 'ipv4', ts: mark });
    for (let i = 0; seenMark < mark; i++) {
      if (i > 2000) throw new Error('the pushed decisions never arrived');
      await pause(5);
    }
    await pushes;
  }

  /** The agent enforces exactly what its organization's reference follower blocks at the agent's threshold. */
  async function expectAgentAgrees(agent: DryRunFollower, follower: ReferenceFollower, label: string): Promise<void> {
    const expected = follower.blocked(AGENT_THRESHOLD, clock.now);
    counts.agentComparisons++;
    if (expected.length > 0) counts.agentNonEmpty++;
    const enforced = (await agent.enforced('ipv4')).map((cidr) => cidr.replace(/\/32$/, '')).sort();
    expect(enforced, `${label}: the agent's enforced set`).toEqual(expected);
  }

  /** The database clock's second: records written now carry it or a later one. */
  async function dbSecond(): Promise<number> {
    const res = await sqlOf(store).query<{ s: number }>('select floor(extract(epoch from clock_timestamp()))::bigint as s');
    return Number(res.rows[0]!.s);
  }

  /** The injected clock (seconds): what Date.now() says in the test. */
  const clock = { now: 0 };

  /**
   * Until the feed has settled every second written so far (the settled-second rule: at most ~1 s).
   * PGlite's clock_timestamp() reads the process's Date (its WebAssembly clock), so there the
   * injected clock moves on by a second instead; PostgreSQL's clock is the machine's.
   */
  async function settle(lastWrite: number): Promise<void> {
    while ((await dbSecond()) <= lastWrite) {
      if (driver.name === 'pglite') {
        clock.now += 1;
        vi.setSystemTime(clock.now * 1000);
      } else await pause(25);
    }
  }

  async function list(app: FastifyInstance, key: string, threshold: number): Promise<string[]> {
    const lines: string[] = [];
    let page: string | undefined;
    for (let n = 0; n < 100; n++) {
      const res = await app.inject({ url: `/api/v1/ipv4/${threshold}${page ? `?page=${encodeURIComponent(page)}` : ''}`, headers: { authorization: key } });
      expect(res.statusCode).toBe(200);
      lines.push(...res.body.split('\n').filter(Boolean));
      page = res.headers.next_page as string | undefined;
      if (!page) return lines.sort();
    }
    throw new Error('the list never ended');
  }

  it('after every sequence, for every organization and threshold', async () => {
    started = performance.now();
    clock.now = Math.floor(Date.now() / 1000);
    vi.useFakeTimers({ toFake: ['Date'], now: clock.now * 1000 });
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 18 }), async (ops) => {
          counts.runs++;
          // Fresh organizations each run: their feeds start empty, their decisions and settings clean.
          orgs = [];
          for (let i = 0; i < 3; i++) orgs.push(await seedOrg(store, { credits: 10_000_000, trust: [0.9, 0.6, 0.4][i]! }));
          const followers = orgs.map((o) => new ReferenceFollower(sqlApp, o.keys.reader));
          agents.clear();
          const run = counts.runs;
          const runAgents = await Promise.all(
            orgs.map(async (o, i) => {
              const agent = await DryRunFollower.create({ baseUrl, apiKey: o.keys.reader, dir: await mkdtemp(join(dir, `run${run}-org${i}-`)), threshold: AGENT_THRESHOLD, kinds: ['ipv4'] });
              agents.set(o.org.id, agent);
              return agent;
            }),
          );
          const settings = orgs.map(() => OrganizationConfig.parse({}));
          // The model of what each organization's agents enforce on values nobody reports: its pushed decisions.
          const unreported = orgs.map(() => new Map<string, { decision: -1 | 0 | 1; ttl: number | null }>());
          // Indicators held before this run belong to the earlier runs: every follower sees them too.
          let lastWrite = await dbSecond();
          for (const op of ops) {
            counts.ops++;
            if (process.env.FOLLOWER_TRACE) console.log(JSON.stringify(op));
            const o = 'org' in op ? orgs[op.org]! : undefined;
            switch (op.op) {
              case 'report': {
                const res = await sqlApp.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: o!.keys.contributor }, payload: { ip: op.target, confidence: op.confidence, source: op.source } });
                // 403: the organization reserved the range; nothing changes.
                expect([200, 201, 403]).toContain(res.statusCode);
                break;
              }
              case 'decide':
              case 'decideOnly': {
                const payload = op.decision === 1 && op.ttlHours !== null ? { decision: 1, ttl: clock.now + op.ttlHours * 3600 } : { decision: op.decision };
                const res = await sqlApp.inject({ method: 'PUT', url: `/api/v1/ips/${encodeURIComponent(op.target)}`, headers: { authorization: o!.keys.contributor }, payload });
                expect([200, 403]).toContain(res.statusCode);
                if (op.op === 'decideOnly' && res.statusCode === 200) unreported[op.org]!.set(op.target, { decision: op.decision, ttl: 'ttl' in payload ? (payload.ttl ?? null) : null });
                break;
              }
              case 'reserve':
              case 'rule': {
                const i = op.org;
                settings[i] = op.op === 'reserve' ? { ...settings[i]!, reserved_ips: op.ranges } : { ...settings[i]!, blocking_roule: op.rule ?? { score: 0, tags: [] } };
                const res = await sqlApp.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: o!.keys.admin }, payload: settings[i] });
                expect(res.statusCode, res.body).toBe(200);
                break;
              }
              case 'jump':
                clock.now += op.seconds;
                vi.setSystemTime(clock.now * 1000);
                break;
              case 'sync': {
                await settle(lastWrite);
                await drainPushes();
                await followers[op.org]!.walk();
                const agent = runAgents[op.org]!;
                await (op.full ? agent.full('ipv4') : agent.incremental('ipv4'));
                await expectAgentAgrees(agent, followers[op.org]!, `org ${op.org} after a ${op.full ? 'full' : 'incremental'} sync`);
                break;
              }
            }
            if (op.op !== 'jump' && op.op !== 'sync') lastWrite = await dbSecond();
          }
          await settle(lastWrite);
          await drainPushes();
          for (let i = 0; i < 3; i++) {
            await followers[i]!.walk();
            // Even runs end with the feed only, odd ones with a full reconcile.
            await (run % 2 === 0 ? runAgents[i]!.incremental('ipv4') : runAgents[i]!.full('ipv4'));
            await expectAgentAgrees(runAgents[i]!, followers[i]!, `org ${i} at the end`);
            const reserved = settings[i]!.reserved_ips.map((r) => parseIpv4(r)!);
            const enforcedUnreported = [...unreported[i]!]
              .filter(([value, d]) => {
                const net = parseIpv4(value)!;
                return d.decision === 1 && (d.ttl === null || d.ttl > clock.now) && !reserved.some((r) => r.start <= net.end && net.start <= r.end);
              })
              .map(([value]) => value)
              .sort();
            for (const t of THRESHOLDS) {
              const expected = followers[i]!.blocked(t, clock.now);
              expect(expected.filter((ip) => (UNREPORTED as readonly string[]).includes(ip)), `org ${i} threshold ${t}: decisions on unreported values`).toEqual(enforcedUnreported);
              counts.comparisons++;
              expect(await list(sqlApp, orgs[i]!.keys.reader, t), `org ${i} threshold ${t} (SQL)`).toEqual(expected);
              expect(await list(mirrorApp, orgs[i]!.keys.reader, t), `org ${i} threshold ${t} (mirror)`).toEqual(expected);
            }
          }
          agents.clear();
          for (const agent of runAgents) await agent.close();
        }),
        {
          numRuns: Number(process.env.FOLLOWER_RUNS ?? 25),
          endOnFailure: true,
          // Each kind of change after a follower caught up, always tried first (then random sequences).
          examples: [
            [[{ op: 'report', org: 0, target: '45.77.1.2', confidence: 1, source: 'ssh' }, { op: 'sync', org: 0, full: true }, { op: 'decide', org: 0, target: '45.77.1.2', decision: 0, ttlHours: null }]],
            [[{ op: 'report', org: 1, target: '45.77.1.3', confidence: 0.2, source: 'waf' }, { op: 'sync', org: 1, full: true }, { op: 'decide', org: 1, target: '45.77.1.0/24', decision: 1, ttlHours: 2 }, { op: 'sync', org: 1, full: true }, { op: 'decide', org: 1, target: '45.77.1.0/24', decision: -1, ttlHours: null }]],
            [[{ op: 'report', org: 2, target: '45.77.1.2', confidence: 1, source: 'scan' }, { op: 'sync', org: 2, full: true }, { op: 'reserve', org: 2, ranges: ['45.77.1.0/30'] }]],
            [[{ op: 'report', org: 0, target: '81.2.69.160', confidence: 0.2, source: 'ssh' }, { op: 'sync', org: 0, full: true }, { op: 'rule', org: 0, rule: { score: 20, tags: ['ssh'] } }, { op: 'jump', seconds: 86_400 }]],
            // A decision nobody reported, followed, cleared, reserved and expired.
            [[{ op: 'decideOnly', org: 0, target: '45.78.3.3', decision: 1, ttlHours: null }, { op: 'sync', org: 0, full: true }, { op: 'decideOnly', org: 0, target: '45.78.3.3', decision: -1, ttlHours: null }]],
            [[{ op: 'decideOnly', org: 1, target: '45.78.3.0/24', decision: 1, ttlHours: 2 }, { op: 'sync', org: 1, full: true }, { op: 'reserve', org: 1, ranges: ['45.78.3.0/30'] }, { op: 'sync', org: 1, full: true }, { op: 'reserve', org: 1, ranges: [] }, { op: 'jump', seconds: 3_600 * 3 }]],
            [[{ op: 'decideOnly', org: 2, target: '45.78.3.0/24', decision: 1, ttlHours: null }, { op: 'decideOnly', org: 2, target: '45.78.3.4', decision: 0, ttlHours: null }, { op: 'sync', org: 2, full: true }, { op: 'decideOnly', org: 2, target: '45.78.3.4', decision: -1, ttlHours: null }]],
            [[{ op: 'report', org: 0, target: '45.77.9.9', confidence: 0.2, source: 'ssh' }, { op: 'sync', org: 1, full: true }, { op: 'report', org: 0, target: '45.77.9.9', confidence: 1, source: 'ssh' }, { op: 'jump', seconds: 21 * 86_400 }]],
            // A decision nobody reported, listed (full sync), cleared and followed by the feed alone.
            [[{ op: 'decideOnly', org: 0, target: '45.78.3.0/24', decision: 1, ttlHours: null }, { op: 'sync', org: 0, full: true }, { op: 'decideOnly', org: 0, target: '45.78.3.0/24', decision: -1, ttlHours: null }, { op: 'sync', org: 0, full: false }]],
          ],
        },
      );
    } finally {
      vi.useRealTimers();
    }
  }, 600_000);
});
