import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { DryRunFollower } from '@rampart/agent/testing';
import { codecOf } from '@rampart/plugin-kit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { liveScore } from '@rampart/scoring';
import { buildApp } from '../src/app.ts';
import { testConfig } from '../src/config.ts';
import { eventBus } from '../src/services/events.ts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

/*
 * The sibling of feed-follower.property.test.ts for domains and URLs: a reference follower written
 * from the documented protocol walks `/domains` (`/urls`) from 0 and then from its cursor, keeps
 * records by their value, and decides as the score lists do: decision 0 never blocks, decision 1
 * always does (domain and URL decisions carry no ttl), otherwise live score (v3.2 decay from the
 * record's (score, ts)) >= threshold. After random sequences of reports by three organizations,
 * decisions (on reported values and on values nobody reports, which are records of their
 * organization), clears and clock jumps of minutes to weeks, its blocked set for each organization
 * and threshold must equal `/domains/score/{t}` (`/urls/score/{t}`) for that organization.
 *
 * A third party follows the same server: each organization's agent, run by the agent's own sync
 * code (full or incremental syncs, decisions pushed as the sync channel pushes them) with the
 * dry-run enforcer. After every sync and at the end of every sequence, what its enforcer holds must
 * equal the reference follower's blocked set at the agent's threshold.
 *
 * The clock is injected (Date only), as in the IPv4 property: on PGlite the database's clock is the
 * process's Date, on PostgreSQL record `ts` come from the server's clock.
 */

const realSetTimeout = globalThis.setTimeout;
const pause = (ms: number) => new Promise((r) => realSetTimeout(r, ms));

type Kind = 'domain' | 'url';
const TARGETS: Record<Kind, readonly string[]> = {
  domain: ['evil.example', 'bad.example', 'sub.bad.example', 'phish.test'],
  url: ['http://evil.example/a', 'http://evil.example/b?x=1', 'https://bad.example/login', 'http://phish.test/'],
};
/** Values nobody ever reports: decisions on them are records of their organization alone (decisions.md, Organizations). */
const UNREPORTED: Record<Kind, readonly string[]> = {
  domain: ['never-reported.example', 'sub.never-reported.example', 'quiet.test'],
  url: ['http://never-reported.example/a', 'https://quiet.test/login?next=1', 'http://quiet.test/'],
};
const THRESHOLDS = [2, 60, 110, 200] as const;
/** The agents' score_threshold. */
const AGENT_THRESHOLD = 60;

type Op =
  | { op: 'report'; org: number; kind: Kind; target: number; confidence: number }
  | { op: 'decide' | 'decideOnly'; org: number; kind: Kind; target: number; decision: -1 | 0 | 1 }
  | { op: 'jump'; seconds: number }
  | { op: 'sync'; org: number; kind: Kind; full: boolean };

const org = fc.integer({ min: 0, max: 2 });
const kind = fc.constantFrom<Kind>('domain', 'url');
const target = fc.integer({ min: 0, max: 3 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('report' as const), org, kind, target, confidence: fc.constantFrom(0.2, 0.6, 1) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('decide' as const), org, kind, target, decision: fc.constantFrom(-1 as const, 0 as const, 1 as const) }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('decideOnly' as const), org, kind, target: fc.integer({ min: 0, max: 2 }), decision: fc.constantFrom(-1 as const, 0 as const, 1 as const, 1 as const) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('jump' as const), seconds: fc.constantFrom(90, 3_600, 86_400, 7 * 86_400, 21 * 86_400) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('sync' as const), org, kind, full: fc.boolean() }) },
);

interface FollowedRecord {
  ts: number;
  score: number;
  decision: number | null;
}

/** What a client keeps for one feed: records by value and its cursor. */
class ReferenceFollower {
  readonly records = new Map<string, FollowedRecord>();
  cursor = 0;

  constructor(
    private readonly app: FastifyInstance,
    private readonly key: string,
    private readonly kind: Kind,
  ) {}

  async walk(): Promise<void> {
    for (let pages = 0; pages < 1000; pages++) {
      const res = await this.app.inject({ url: `/api/v1/${this.kind}s?ts=${this.cursor}&page_size=1000`, headers: { authorization: this.key } });
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json() as { header: { next_ts: number }; body: Array<FollowedRecord & { domain?: string; url?: string }> };
      if (page.body.length === 0) return;
      for (const r of page.body) this.records.set((r.domain ?? r.url)!, { ts: r.ts, score: r.score, decision: r.decision });
      this.cursor = page.header.next_ts;
    }
    throw new Error('the feed never ended');
  }

  blocked(threshold: number, now: number): string[] {
    const out: string[] = [];
    for (const [value, r] of this.records) {
      if (r.decision === 0) continue;
      if (r.decision === 1 || liveScore(r.score, now - r.ts) >= threshold) out.push(value);
    }
    return out.sort();
  }
}

describe.each(driverCases())('a reference follower of /domains and /urls agrees with their score lists on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let baseUrl = '';
  let dir = '';
  const counts = { runs: 0, ops: 0, comparisons: 0, nonEmpty: 0, agentComparisons: 0, agentNonEmpty: 0 };
  let started = 0;
  /** This run's agents by organization id, and the decisions pushed to them, in order. */
  const agents = new Map<number, DryRunFollower>();
  let pushes: Promise<unknown> = Promise.resolve();
  let marks = 0;
  let seenMark = 0;
  let stopListening: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    store = await driver.open();
    app = await buildApp({ config: testConfig({ authCacheSeconds: 0, rateLimitPerMinute: 1_000_000 }), store, ipv4Mirror: null });
    await app.listen({ host: '127.0.0.1', port: 0 });
    baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`;
    dir = await mkdtemp(join(tmpdir(), 'named-follower-'));
    // The sync channel's pushes (sync/hub.ts forwards decision_changed to the organization's agents).
    stopListening = await eventBus(store.connection).subscribe((event) => {
      if (event.type === 'feed_changed' && event.org_id === -1) seenMark = Math.max(seenMark, event.ts);
      if (event.type !== 'decision_changed' || event.kind === 'ipv4') return;
      const agent = agents.get(event.org_id);
      const kind = event.kind;
      if (agent && kind !== 'file') pushes = pushes.then(() => agent.decision(kind, event.indicator, event.decision, event.ttl, event.ts));
    });
  }, 240_000);
  afterAll(async () => {
    vi.useRealTimers();
    console.log(
      `named feed follower property on ${driver.name}: ${counts.runs} runs, ${counts.ops} operations, ${counts.comparisons} list comparisons (${counts.nonEmpty} of non-empty lists), ${counts.agentComparisons} agent comparisons (${counts.agentNonEmpty} non-empty), ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    await stopListening?.();
    await app?.close();
    await store?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Until every decision published so far has reached the agents: a mark sent after them comes back after them. */
  async function drainPushes(): Promise<void> {
    const mark = ++marks;
    await eventBus(store.connection).publish({ type: 'feed_changed', org_id: -1, kind: 'domain', ts: mark });
    for (let i = 0; seenMark < mark; i++) {
      if (i > 2000) throw new Error('the pushed decisions never arrived');
      await pause(5);
    }
    await pushes;
  }

  /** The agent of organization `i` enforces exactly what its reference follower blocks at the agent's threshold. */
  async function expectAgentAgrees(agent: DryRunFollower, follower: ReferenceFollower, k: Kind, label: string): Promise<void> {
    const codec = codecOf(k);
    const expected = follower.blocked(AGENT_THRESHOLD, clock.now).map((v) => codec.canonical(v)!).sort();
    counts.agentComparisons++;
    if (expected.length > 0) counts.agentNonEmpty++;
    expect((await agent.enforced(k)).slice().sort(), `${label}: the agent's enforced ${k}s`).toEqual(expected);
  }

  async function dbSecond(): Promise<number> {
    const res = await sqlOf(store).query<{ s: number }>('select floor(extract(epoch from clock_timestamp()))::bigint as s');
    return Number(res.rows[0]!.s);
  }

  const clock = { now: 0 };

  /** Until the feeds have settled every second written so far (see the IPv4 property). */
  async function settle(lastWrite: number): Promise<void> {
    while ((await dbSecond()) <= lastWrite) {
      if (driver.name === 'pglite') {
        clock.now += 1;
        vi.setSystemTime(clock.now * 1000);
      } else await pause(25);
    }
  }

  async function list(key: string, k: Kind, threshold: number): Promise<string[]> {
    const values: string[] = [];
    let page: string | undefined;
    for (let n = 0; n < 100; n++) {
      const query = [k === 'domain' ? 'protocol=HTTP' : '', page ? `page=${encodeURIComponent(page)}` : ''].filter(Boolean).join('&');
      const res = await app.inject({ url: `/api/v1/${k}s/score/${threshold}?${query}`, headers: { authorization: key } });
      expect(res.statusCode, res.body).toBe(200);
      // The targets hold no comma or quote: each CSV line is the value itself.
      values.push(...res.body.split('\n').filter(Boolean).map((l) => (k === 'domain' ? l.replace(/^http:\/\//, '') : l)));
      page = res.headers.next_page as string | undefined;
      if (!page) return values.sort();
    }
    throw new Error('the list never ended');
  }

  it('after every sequence, for every organization, kind and threshold', async () => {
    started = performance.now();
    clock.now = Math.floor(Date.now() / 1000);
    vi.useFakeTimers({ toFake: ['Date'], now: clock.now * 1000 });
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 18 }), async (ops) => {
          counts.runs++;
          const orgs: TestOrg[] = [];
          for (let i = 0; i < 3; i++) orgs.push(await seedOrg(store, { credits: 10_000_000, trust: [0.9, 0.6, 0.4][i]! }));
          const followers = orgs.map((o) => ({ domain: new ReferenceFollower(app, o.keys.reader, 'domain'), url: new ReferenceFollower(app, o.keys.reader, 'url') }));
          agents.clear();
          const run = counts.runs;
          const runAgents = await Promise.all(
            orgs.map(async (o, i) => {
              const agent = await DryRunFollower.create({ baseUrl, apiKey: o.keys.reader, dir: await mkdtemp(join(dir, `run${run}-org${i}-`)), threshold: AGENT_THRESHOLD, kinds: ['domain', 'url'] });
              agents.set(o.org.id, agent);
              return agent;
            }),
          );
          let lastWrite = await dbSecond();
          for (const op of ops) {
            counts.ops++;
            switch (op.op) {
              case 'report': {
                const value = TARGETS[op.kind][op.target]!;
                const res = await app.inject({ method: 'POST', url: `/api/v1/${op.kind}s`, headers: { authorization: orgs[op.org]!.keys.contributor }, payload: { [op.kind]: value, confidence: op.confidence } });
                expect(res.statusCode, res.body).toBe(200);
                break;
              }
              case 'decide':
              case 'decideOnly': {
                const value = (op.op === 'decide' ? TARGETS : UNREPORTED)[op.kind][op.target]!;
                const res = await app.inject({ method: 'PUT', url: `/api/v1/${op.kind}s/${encodeURIComponent(value)}`, headers: { authorization: orgs[op.org]!.keys.contributor }, payload: { decision: op.decision } });
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
                await followers[op.org]![op.kind].walk();
                const agent = runAgents[op.org]!;
                await (op.full ? agent.full(op.kind) : agent.incremental(op.kind));
                await expectAgentAgrees(agent, followers[op.org]![op.kind], op.kind, `org ${op.org} after a ${op.full ? 'full' : 'incremental'} sync`);
                break;
              }
            }
            if (op.op === 'report' || op.op === 'decide' || op.op === 'decideOnly') lastWrite = await dbSecond();
          }
          await settle(lastWrite);
          await drainPushes();
          for (let i = 0; i < 3; i++) {
            for (const k of ['domain', 'url'] as const) {
              await followers[i]![k].walk();
              // Even runs end with the feed only, odd ones with a full reconcile.
              await (run % 2 === 0 ? runAgents[i]!.incremental(k) : runAgents[i]!.full(k));
              await expectAgentAgrees(runAgents[i]!, followers[i]![k], k, `org ${i} at the end`);
              for (const t of THRESHOLDS) {
                counts.comparisons++;
                const expected = followers[i]![k].blocked(t, clock.now);
                if (expected.length > 0) counts.nonEmpty++;
                expect(await list(orgs[i]!.keys.reader, k, t), `org ${i} ${k} threshold ${t}`).toEqual(expected);
              }
            }
          }
          agents.clear();
          for (const agent of runAgents) await agent.close();
        }),
        {
          numRuns: Number(process.env.FOLLOWER_RUNS ?? 20),
          endOnFailure: true,
          // Each kind of change after a follower caught up, always tried first.
          examples: [
            [[{ op: 'report', org: 0, kind: 'domain', target: 0, confidence: 1 }, { op: 'sync', org: 0, kind: 'domain', full: true }, { op: 'decide', org: 0, kind: 'domain', target: 0, decision: 0 }]],
            [[{ op: 'report', org: 1, kind: 'url', target: 1, confidence: 0.2 }, { op: 'sync', org: 1, kind: 'url', full: true }, { op: 'decide', org: 1, kind: 'url', target: 1, decision: 1 }, { op: 'sync', org: 1, kind: 'url', full: true }, { op: 'decide', org: 1, kind: 'url', target: 1, decision: -1 }]],
            [[{ op: 'report', org: 2, kind: 'domain', target: 2, confidence: 0.2 }, { op: 'sync', org: 0, kind: 'domain', full: true }, { op: 'report', org: 0, kind: 'domain', target: 2, confidence: 1 }, { op: 'jump', seconds: 21 * 86_400 }]],
            [[{ op: 'decide', org: 0, kind: 'url', target: 3, decision: 1 }, { op: 'sync', org: 0, kind: 'url', full: true }, { op: 'report', org: 1, kind: 'url', target: 3, confidence: 0.6 }]],
            // A decision nobody reported, listed (full sync), cleared and followed by the feed alone.
            [[{ op: 'decideOnly', org: 0, kind: 'domain', target: 0, decision: 1 }, { op: 'sync', org: 0, kind: 'domain', full: true }, { op: 'decideOnly', org: 0, kind: 'domain', target: 0, decision: -1 }, { op: 'sync', org: 0, kind: 'domain', full: false }]],
            [[{ op: 'decideOnly', org: 1, kind: 'url', target: 1, decision: 0 }, { op: 'sync', org: 1, kind: 'url', full: false }, { op: 'decideOnly', org: 1, kind: 'url', target: 1, decision: 1 }, { op: 'sync', org: 1, kind: 'url', full: true }, { op: 'jump', seconds: 21 * 86_400 }, { op: 'decideOnly', org: 2, kind: 'url', target: 1, decision: 1 }]],
          ],
        },
      );
    } finally {
      vi.useRealTimers();
    }
  }, 900_000);
});
