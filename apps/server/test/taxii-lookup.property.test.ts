import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { liveScore } from '@rampart/scoring';
import { buildApp } from '../src/app.ts';
import { testConfig } from '../src/config.ts';
import { confidenceOf } from '../src/services/stix/stix21.ts';
import { TAXII_COLLECTIONS } from '../src/services/stix/taxii.ts';
import type { Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, type TestOrg } from './support/app.ts';
import { TaxiiClient } from './support/taxii-client.ts';

/*
 * The TAXII collections against the look-ups: random sequences of reports by three organizations,
 * their decisions (whitelist, blacklist, clear), incremental polls by a TAXII client of each
 * organization and, on PGlite, clock jumps of minutes to weeks (indicators decay away). After each
 * sequence every organization's client polls once more; the newest version it holds of each
 * object must agree with that organization's look-up of the indicator: the same anchor
 * (`valid_from`, and `modified` unless it decayed away since), `revoked` exactly when the
 * organization whitelisted it or its live score fell below the lowest band (1) without a
 * blacklist, `confidence` from the anchor's score, `indicator_types`; and no version may have
 * come twice. On PostgreSQL record `ts` come from the server's clock, so the clock is not moved.
 */

const realSetTimeout = globalThis.setTimeout;
const pause = (ms: number) => new Promise((r) => realSetTimeout(r, ms));

type Kind = 'domain' | 'url';
const TARGETS: Record<Kind, readonly string[]> = {
  domain: ['evil.example', 'bad.example', 'sub.bad.example'],
  url: ['http://evil.example/a', 'https://bad.example/login?x=1', 'http://phish.test/'],
};
const COLLECTION = Object.fromEntries(TAXII_COLLECTIONS.map((c) => [c.kind, `/taxii2/alliance/collections/${c.collection.id}/`])) as Record<Kind, string>;

type Op =
  | { op: 'report'; org: number; kind: Kind; target: number; confidence: number }
  | { op: 'decide'; org: number; kind: Kind; target: number; decision: -1 | 0 | 1 }
  | { op: 'jump'; seconds: number }
  | { op: 'poll'; org: number; kind: Kind; limit: number };

const org = fc.integer({ min: 0, max: 2 });
const kind = fc.constantFrom<Kind>('domain', 'url');
const target = fc.integer({ min: 0, max: 2 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('report' as const), org, kind, target, confidence: fc.constantFrom(0.1, 0.6, 1) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('decide' as const), org, kind, target, decision: fc.constantFrom(-1 as const, 0 as const, 1 as const) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('jump' as const), seconds: fc.constantFrom(90, 3_600, 86_400, 7 * 86_400, 21 * 86_400) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('poll' as const), org, kind, limit: fc.constantFrom(1, 2, 50) }) },
);

describe.each(driverCases())('the newest TAXII version of each object agrees with the look-up on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  const counts = { runs: 0, ops: 0, compared: 0, revoked: 0 };
  const clock = { now: 0 };

  beforeAll(async () => {
    store = await driver.open();
    app = await buildApp({ config: testConfig({ authCacheSeconds: 0, rateLimitPerMinute: 1_000_000 }), store, ipv4Mirror: null });
    await app.ready();
  }, 300_000);
  afterAll(async () => {
    vi.useRealTimers();
    console.log(`TAXII look-up property on ${driver.name}: ${counts.runs} runs, ${counts.ops} operations, ${counts.compared} objects compared (${counts.revoked} revoked)`);
    await app?.close();
    await store?.close();
  });

  async function dbSecond(): Promise<number> {
    const res = await sqlOf(store).query<{ s: number }>('select floor(extract(epoch from clock_timestamp()))::bigint as s');
    return Number(res.rows[0]!.s);
  }

  /** Until the feeds have settled every second written so far. */
  async function settle(lastWrite: number): Promise<void> {
    while ((await dbSecond()) <= lastWrite) {
      if (driver.name === 'pglite') {
        clock.now += 1;
        vi.setSystemTime(clock.now * 1000);
      } else await pause(25);
    }
  }

  it('after every sequence, for every organization and kind', async () => {
    clock.now = Math.floor(Date.now() / 1000);
    if (driver.name === 'pglite') vi.useFakeTimers({ toFake: ['Date'], now: clock.now * 1000 });
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 14 }), async (ops) => {
          counts.runs++;
          const orgs: TestOrg[] = [];
          for (let i = 0; i < 3; i++) orgs.push(await seedOrg(store, { credits: 10_000_000, trust: [0.9, 0.6, 0.4][i]! }));
          // Each run has its own targets: an earlier run's indicators do not carry over.
          const tag = `r${counts.runs}`;
          const valueOf = (k: Kind, t: number) => (k === 'domain' ? `${tag}.${TARGETS.domain[t]!}` : TARGETS.url[t]!.replace('://', `://${tag}.`));
          const clients = orgs.map((o) => ({ domain: new TaxiiClient(app, o.keys.reader), url: new TaxiiClient(app, o.keys.reader) }));
          let lastWrite = await dbSecond();
          for (const op of ops) {
            counts.ops++;
            switch (op.op) {
              case 'report': {
                const res = await app.inject({ method: 'POST', url: `/api/v1/${op.kind}s`, headers: { authorization: orgs[op.org]!.keys.contributor }, payload: { [op.kind]: valueOf(op.kind, op.target), confidence: op.confidence } });
                expect(res.statusCode, res.body).toBe(200);
                lastWrite = await dbSecond();
                break;
              }
              case 'decide': {
                const res = await app.inject({ method: 'PUT', url: `/api/v1/${op.kind}s/${encodeURIComponent(valueOf(op.kind, op.target))}`, headers: { authorization: orgs[op.org]!.keys.contributor }, payload: { decision: op.decision } });
                expect(res.statusCode, res.body).toBe(200);
                lastWrite = await dbSecond();
                break;
              }
              case 'jump':
                if (driver.name !== 'pglite') break;
                clock.now += op.seconds;
                vi.setSystemTime(clock.now * 1000);
                break;
              case 'poll':
                await settle(lastWrite);
                await clients[op.org]![op.kind].poll(COLLECTION[op.kind], op.limit);
                break;
            }
          }
          await settle(lastWrite);
          for (let i = 0; i < 3; i++) {
            for (const k of ['domain', 'url'] as const) {
              const client = clients[i]![k];
              await client.poll(COLLECTION[k], 2);
              const now = (await dbSecond()) - 1;
              // Every version came once.
              const versions = client.received.map((r) => `${r.object.id} ${String(r.object.modified)}`);
              expect(new Set(versions).size, 'a version came twice').toBe(versions.length);
              const byValue = new Map([...client.newest.values()].filter((o) => o.type === 'indicator').map((o) => [(o.external_references as Array<{ external_id: string }>)[0]!.external_id, o]));
              for (let t = 0; t < 3; t++) {
                const value = valueOf(k, t);
                const res = await app.inject({ url: `/api/v1/${k}s/${encodeURIComponent(value)}`, headers: { authorization: orgs[i]!.keys.reader } });
                const object = byValue.get(value);
                if (res.statusCode === 404) {
                  expect(object, `org ${i} ${value}: an object the look-up does not know`).toBeUndefined();
                  continue;
                }
                expect(res.statusCode, res.body).toBe(200);
                expect(object, `org ${i} ${value}: no object`).toBeDefined();
                const record = res.json() as { ts: number; score: number; decision: number | null };
                const whitelisted = record.decision === 0;
                const decayed = record.decision !== 1 && liveScore(record.score, now - record.ts) < 1;
                const label = `org ${i} ${value} ${JSON.stringify(record)} at ${now}`;
                expect(object!.revoked ?? false, label).toBe(whitelisted || decayed);
                expect(object!.valid_from, label).toBe(new Date(record.ts * 1000).toISOString());
                expect(object!.indicator_types, label).toEqual([whitelisted ? 'benign' : 'malicious-activity']);
                if (decayed && !whitelisted) {
                  const end = Date.parse(object!.modified as string) / 1000;
                  expect(liveScore(record.score, end - record.ts), label).toBeLessThan(1);
                  // The first second below the band (the anchor itself when its score already is).
                  expect(end, label).toBeGreaterThanOrEqual(record.ts);
                  if (end > record.ts) expect(liveScore(record.score, end - 1 - record.ts), label).toBeGreaterThanOrEqual(1);
                } else {
                  expect(object!.modified, label).toBe(new Date(record.ts * 1000).toISOString());
                  expect(object!.confidence, label).toBe(confidenceOf(record.score));
                }
                counts.compared++;
                if (object!.revoked) counts.revoked++;
              }
            }
          }
        }),
        {
          numRuns: Number(process.env.TAXII_PROPERTY_RUNS ?? 15),
          endOnFailure: true,
          examples: [
            [[{ op: 'report', org: 0, kind: 'domain', target: 0, confidence: 1 }, { op: 'poll', org: 0, kind: 'domain', limit: 1 }, { op: 'decide', org: 0, kind: 'domain', target: 0, decision: 0 }]],
            [[{ op: 'report', org: 1, kind: 'url', target: 1, confidence: 0.1 }, { op: 'poll', org: 1, kind: 'url', limit: 2 }, { op: 'jump', seconds: 21 * 86_400 }, { op: 'poll', org: 1, kind: 'url', limit: 2 }, { op: 'report', org: 2, kind: 'url', target: 1, confidence: 1 }]],
            [[{ op: 'report', org: 2, kind: 'domain', target: 2, confidence: 0.6 }, { op: 'decide', org: 0, kind: 'domain', target: 2, decision: 1 }, { op: 'jump', seconds: 21 * 86_400 }, { op: 'decide', org: 0, kind: 'domain', target: 2, decision: -1 }]],
          ],
        },
      );
    } finally {
      vi.useRealTimers();
    }
  }, 900_000);
});
