import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, driverCases, seedOrg, testConfig, type Store } from '@rampart/server/testing';
import { laneValues, prng, randomOp, sendOp, serverList, startFollower, type BurstOp, type Follower, type LaneKeys } from './burst-lab.ts';

/*
 * Bursts converge through the push channel (issue 30, item 3). Lanes of random bursts (reports
 * that cross the threshold, blacklists, whitelists, clears, ttl blacklists, network decisions,
 * reports on decided addresses) go through the real HTTP API of a control plane in this process;
 * per lane, a real agent (the `Agent` class, its syncer, channel and enforcer worker) follows over
 * the real sync channel with the real dry-run enforcer, wrapped to record each change it is handed.
 *
 * After every operation the lane reads its organization's `/ipv4/{t}` (generation g = operations
 * acknowledged so far); each enforcer change is stamped with the generation it happened in
 * (g + 0.5 while operation g + 1 is in flight). The invariant: an address the agent removes was
 * not listed by the server at some generation between its last addition and its removal: an
 * address listed throughout is never taken away. After every burst the agent's enforced set must
 * equal the list. Lanes use disjoint /16s, so they run side by side; the seed is printed on failure
 * (PUSH_BURSTS_SEED replays it, PUSH_BURSTS_PER_LANE and PUSH_BURSTS_LANES size the run).
 */

const THRESHOLD = 60;
const LANES = Number(process.env.PUSH_BURSTS_LANES ?? 10);
const BURSTS_PER_LANE = Number(process.env.PUSH_BURSTS_PER_LANE ?? 50);
const MAX_OPS = 10;
/** A liveness bound, not a measurement: a lane that has not converged by then never will. */
const CONVERGE_GIVE_UP_MS = 30_000;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sorted = (s: Iterable<string>) => [...s].sort();

describe.each(driverCases())('bursts through the push channel on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let url: string;
  const followers: Follower[] = [];
  const seed = Number(process.env.PUSH_BURSTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const stats = { bursts: 0, ops: 0, removals: 0, waits: [] as number[] };

  beforeAll(async () => {
    store = await driver.open();
    app = await buildApp({ config: testConfig({ authCacheSeconds: 0, rateLimitPerMinute: 10_000_000 }), store });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`;
  });
  afterAll(async () => {
    const waits = [...stats.waits].sort((a, b) => a - b);
    console.log(
      `push bursts on ${driver.name} (seed ${seed}): ${stats.bursts} bursts, ${stats.ops} operations, ${stats.removals} removals checked; ` +
        `convergence p50 ${waits[waits.length >> 1]?.toFixed(0)} ms, max ${waits.at(-1)?.toFixed(0)} ms (information only)`,
    );
    await Promise.all(followers.map((f) => f.stop()));
    await app?.close();
    await store?.close();
  });

  async function lane(n: number, other: string): Promise<void> {
    const rand = prng(seed + n);
    const { prefix } = laneValues(n);
    const own = await seedOrg(store, { credits: 100_000_000, trust: 0.9 });
    const keys: LaneKeys = { own: own.keys.contributor, other };
    const gaid = `RMP-AGENT-ID-BURST${seed.toString(16).toUpperCase()}L${n}`;
    const list = () => serverList(url, own.keys.reader, THRESHOLD, prefix);
    /** lists[g]: the organization's list after g acknowledged operations. */
    const lists: Set<string>[] = [await list()];
    /** Operations acknowledged; while one is in flight the stamp is acked + 0.5 (either state may hold). */
    let acked = 0;
    let inFlight = false;
    const follower = await startFollower({ url, adminKey: own.keys.admin, gaid, threshold: THRESHOLD, logLevel: process.env.PUSH_BURSTS_LOG ?? 'error' });
    followers.push(follower);
    const { recorder } = follower;
    recorder.clock = () => acked + (inFlight ? 0.5 : 0);
    const log: string[] = [];
    let checked = 0;

    const enforced = () => new Set([...recorder.held].filter((v) => v.startsWith(prefix)));
    const fail = (what: string) => {
      throw new Error(`lane ${n}, seed ${seed} (PUSH_BURSTS_SEED=${seed} replays it): ${what}\noperations (g: op):\n${log.slice(-60).join('\n')}`);
    };

    /** Every removal since the last check: the address was unlisted at some generation since its last addition. */
    const checkRemovals = () => {
      const changes = recorder.changes;
      for (; checked < changes.length; checked++) {
        const c = changes[checked]!;
        if (c.kind !== 'remove' || !c.value.startsWith(prefix)) continue;
        stats.removals++;
        let addedAt = 0;
        for (let i = checked - 1; i >= 0; i--) {
          if (changes[i]!.value === c.value && changes[i]!.kind === 'add') {
            addedAt = changes[i]!.at;
            break;
          }
        }
        const from = Math.floor(addedAt);
        const to = Math.ceil(c.at);
        let unlisted = false;
        for (let g = from; g <= to && !unlisted; g++) unlisted = !lists[g]!.has(c.value);
        if (!unlisted) fail(`${c.value} removed at generation ${c.at} (added at ${addedAt}) while the server listed it at every generation in between`);
      }
    };

    const converge = async (): Promise<number> => {
      const t0 = performance.now();
      const want = sorted(lists.at(-1)!);
      for (;;) {
        const have = sorted(enforced());
        if (JSON.stringify(have) === JSON.stringify(want)) return performance.now() - t0;
        if (performance.now() - t0 > CONVERGE_GIVE_UP_MS) {
          fail(`not converged: enforced ${JSON.stringify(have)}, listed ${JSON.stringify(want)}`);
        }
        await pause(10);
      }
    };

    await converge();
    for (let b = 0; b < BURSTS_PER_LANE; b++) {
      const size = 1 + Math.floor(rand() * MAX_OPS);
      const ops: BurstOp[] = Array.from({ length: size }, () => randomOp(rand, n));
      for (const op of ops) {
        inFlight = true;
        const status = await sendOp(url, keys, op);
        acked++;
        inFlight = false;
        if (status !== 200 && status !== 201) fail(`${JSON.stringify(op)} answered ${status}`);
        // Nothing else changes this lane's addresses: the list read now is the state since the acknowledgment.
        lists[acked] = await list();
        const g = acked;
        log.push(`${g}: ${JSON.stringify(op)} → ${sorted(lists[g]!).join(' ')}`);
        stats.ops++;
      }
      log.push(`-- burst ${b} sent`);
      stats.waits.push(await converge());
      checkRemovals();
      stats.bursts++;
    }
  }

  it(`${LANES} lanes of ${BURSTS_PER_LANE} bursts: the agent never removes a listed address, and converges after each burst`, async () => {
    const other = await seedOrg(store, { credits: 100_000_000, trust: 0.5 });
    await Promise.all(Array.from({ length: LANES }, (_, n) => lane(n, other.keys.contributor)));
    expect(stats.bursts).toBe(LANES * BURSTS_PER_LANE);
  }, 1_800_000);
});
