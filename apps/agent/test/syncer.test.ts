import { until } from '@rampart/plugin-kit/testing';
import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import { DryRunConfig, dryRunEnforcer, readDryRunFile } from '@rampart/enforcer-dry-run';
import { CsvConfig, csvEnforcer, csvFormat } from '@rampart/enforcer-csv';
import type { Enforcer } from '@rampart/plugin-kit';
import { sampleIpv4Page, sampleIpv4Record } from '@rampart/contracts/fixtures';
import { ipv4Key } from '@rampart/contracts';
import { BlockState } from '../src/sync/block-state.ts';
import { FeedStateFile } from '../src/sync/feed-state.ts';
import { NeverBlock } from '../src/sync/never-block.ts';
import { LAST_RESORT_GC, SyncRefusedError, Syncer, type SyncerDeps } from '../src/sync/syncer.ts';
import { FED } from '../src/sync/record-table.ts';
import { membersDigest, type EnforcerWorker } from '../src/sync/enforcer-worker.ts';
import { createMetrics, type AgentMetrics } from '../src/runtime/metrics.ts';

/** A control plane stand-in whose feed and list the test edits between syncs. */
interface World {
  records: { ip: string; score: number; ts: number; decision: 0 | 1 | null; ttl: number | null }[];
  list: string[];
  failListPage2: boolean;
}

const now = Math.floor(Date.now() / 1000);
const log = pino({ level: 'silent' });

describe('syncer', () => {
  let app: FastifyInstance;
  let dir: string;
  let world: World;
  let syncer: Syncer;
  let state: BlockState;
  let dryRunPath: string;
  let enforcers: EnforcerWorker[];
  let enforcerTimeoutMs = 120_000;
  let force = false;
  let metrics: AgentMetrics;

  let feedbacks: Record<string, unknown>[] = [];

  async function makeSyncer(overrides: { maximumRules?: number; pageSize?: number; gc?: SyncerDeps['gc']; gaid?: string } = {}) {
    const port = (app.server.address() as AddressInfo).port;
    state = new BlockState(new NeverBlock({ ownAddresses: [], controlPlane: [], reservedIps: [], allowList: [] }));
    const enforcer = await dryRunEnforcer.create(DryRunConfig.parse({ active: true, path: dryRunPath }), { log });
    metrics = createMetrics();
    syncer = new Syncer({
      client: new RampartClient({ baseUrl: `http://127.0.0.1:${port}/api/v1`, apiKey: 'k', retries: 0 }),
      state,
      feedState: new FeedStateFile(dir),
      enforcers: () => enforcers,
      policy: () => ({ threshold: 100, maximumRules: overrides.maximumRules ?? 1000 }),
      gaid: () => overrides.gaid,
      log,
      metrics,
      options: () => ({ pageSize: overrides.pageSize ?? 3, forceSync: force, maxRemovalFraction: 0.5, minGuardedRemovals: 2, saveEveryMs: 0, enforcerTimeoutMs, reconcileSeconds: 45 }),
      ...(overrides.gc ? { gc: overrides.gc } : {}),
    });
    enforcers = [syncer.worker('dry_run', enforcer)];
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncer-'));
    dryRunPath = join(dir, 'dry-run.json');
    force = false;
    enforcerTimeoutMs = 120_000;
    world = {
      records: Array.from({ length: 8 }, (_, i) => ({ ip: `45.70.0.${i + 1}`, score: 400, ts: now - 100 + i, decision: null, ttl: null })),
      list: Array.from({ length: 8 }, (_, i) => `45.70.0.${i + 1}`),
      failListPage2: false,
    };
    app = Fastify();
    app.get('/api/v1/ips', async (req) => {
      const q = req.query as { ts: string; page_size: string };
      const ts = Number(q.ts);
      const body = world.records
        .filter((r) => r.ts > ts)
        .sort((a, b) => a.ts - b.ts)
        .slice(0, Number(q.page_size))
        .map((r, i) => ({ ...sampleIpv4Record, gid: `RMP-RULE-GID-${i}`, ...r, ip_info: undefined, info: undefined, elk_ts: undefined, elk_entry_ts: undefined }));
      return { header: { ...sampleIpv4Page.header, ts: String(ts), next_ts: body.at(-1)?.ts ?? ts }, body };
    });
    app.get('/api/v1/ipv4/:min', async (req, reply) => {
      const page = Number((req.query as { page?: string }).page ?? 0);
      if (page === 1 && world.failListPage2) return reply.code(503).send({ type: 'https://rampart.dev/problems/internal', title: 'x', status: 503, detail: 'down', instance: '/' });
      const slice = world.list.slice(page * 5, page * 5 + 5);
      if ((page + 1) * 5 < world.list.length) reply.header('next_page', String(page + 1));
      return reply.type('text/plain').send(slice.join('\n'));
    });
    feedbacks = [];
    app.post('/api/v1/agents/feedback', async (req) => {
      feedbacks.push(req.body as Record<string, unknown>);
      return null;
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    await makeSyncer();
  });
  afterEach(async () => {
    for (const w of enforcers) await w.close(1000);
    await syncer.stop();
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A sync operation, then every enforcer done with what it was handed (they apply on their own queues). */
  async function settled<T>(operation: Promise<T>): Promise<T> {
    try {
      return await operation;
    } finally {
      await syncer.idle();
    }
  }

  const enforced = async () => (await readDryRunFile(dryRunPath))?.enforced ?? [];
  const all = Array.from({ length: 8 }, (_, i) => `45.70.0.${i + 1}/32`);

  it('a full sync walks the feed and the paged list and replaces the enforcer set', async () => {
    await settled(syncer.full());
    expect(await enforced()).toEqual(all);
    expect(syncer.cursor).toBe(now - 93);
  });

  it('refuses an empty server list while rules exist, unless forced', async () => {
    await settled(syncer.full());
    world.list = [];
    await expect(syncer.full()).rejects.toMatchObject({ reason: 'empty_list' });
    expect(await enforced()).toEqual(all);
    await settled(syncer.full(true));
    // Forced: the list no longer marks them, but their feed records still block them.
    expect(await enforced()).toEqual(all);
  });

  it('a partial pull (a failing list page) changes nothing', async () => {
    await settled(syncer.full());
    world.failListPage2 = true;
    world.records = world.records.map((r) => ({ ...r, decision: 0 as const, ts: r.ts + 1000 }));
    await expect(syncer.full()).rejects.toMatchObject({ status: 503 });
    expect(await enforced()).toEqual(all);
  });

  it('refuses a sync that removes more than half the set; applies it when forced', async () => {
    await settled(syncer.full());
    // Five of eight whitelisted in the feed: 5 > 8 * 0.5.
    for (const r of world.records.slice(0, 5)) Object.assign(r, { decision: 0, ts: r.ts + 1000 });
    const err = await syncer.incremental().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SyncRefusedError);
    expect(err).toMatchObject({ reason: 'mass_removal', detail: { previous: 8, remove: 5 } });
    expect(await enforced()).toEqual(all);
    force = true;
    await settled(syncer.incremental());
    expect(await enforced()).toEqual(all.slice(5));
  });

  it('a small removal is applied as a diff; the cursor and records survive a restart', async () => {
    await settled(syncer.full());
    Object.assign(world.records[0]!, { decision: 0, ts: now + 5 });
    await settled(syncer.incremental());
    expect(await enforced()).toEqual(all.slice(1));
    expect((await readDryRunFile(dryRunPath))?.operations.at(-1)).toMatchObject({ op: 'apply', removed: ['45.70.0.1/32'], added: [] });
    await syncer.stop();
    await makeSyncer();
    await syncer.restore();
    expect(syncer.cursor).toBe(now + 5);
    expect(state.table.size).toBe(8);
  });

  it('withdraw removes every rule and resume brings them back', async () => {
    await settled(syncer.full());
    await settled(syncer.withdraw());
    expect(await enforced()).toEqual([]);
    await settled(syncer.incremental());
    expect(await enforced()).toEqual([]);
    syncer.resume();
    await settled(syncer.incremental());
    expect(await enforced()).toEqual(all);
  });

  it('keeps what each enforcer reports enforcing (a capacity cut included) for feedback and metrics', async () => {
    const small = await dryRunEnforcer.create(DryRunConfig.parse({ active: true, path: join(dir, 'small.json'), capacity: 5 }), { log });
    enforcers.push(syncer.worker('small', small));
    await settled(syncer.full());
    expect(enforcers.map((e) => [e.label, e.enforced, e.cut])).toEqual([
      ['dry_run', 8, 0],
      ['small', 5, 3],
    ]);
    const gauge = async (name: 'enforcerEntries' | 'enforcerCut') => Object.fromEntries((await metrics[name].get()).values.map((v) => [v.labels.enforcer, v.value]));
    expect(await gauge('enforcerEntries')).toEqual({ dry_run: 8, small: 5 });
    expect(await gauge('enforcerCut')).toEqual({ dry_run: 0, small: 3 });
    await settled(syncer.withdraw());
    expect(await gauge('enforcerEntries')).toEqual({ dry_run: 0, small: 0 });
  });

  it('sends with each feedback what the target holds, read back, against what it should hold after its cap', async () => {
    await syncer.stop();
    await makeSyncer({ gaid: 'RMP-AGENT-ID-READBACK' });
    const small = await dryRunEnforcer.create(DryRunConfig.parse({ active: true, path: join(dir, 'small.json'), capacity: 5 }), { log });
    enforcers.push(syncer.worker('router_a', small));
    await settled(syncer.full());
    await expect.poll(() => feedbacks.length).toBe(2);
    const byPlugin = Object.fromEntries(feedbacks.map((f) => [f.plugin, f]));
    expect(byPlugin.dry_run).toMatchObject({ blacklist: 8, expected: 8, held: 8, held_digest: membersDigest(all), cut: 0, protected: 0, reconcile_seconds: 45 });
    expect(byPlugin.dry_run).not.toHaveProperty('capacity');
    const kept = (await readDryRunFile(join(dir, 'small.json')))!.enforced;
    expect(byPlugin.router_a).toMatchObject({ blacklist: 5, expected: 5, held: 5, held_digest: membersDigest(kept), cut: 3, capacity: 5 });
  });

  it('after a large replace, collects once nothing holds the list handed to the enforcer any more', async () => {
    // The packaged agent runs with --expose-gc; here the collector is exposed for this test only.
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as (options: typeof LAST_RESORT_GC) => void;
    const count = 10_001; // above the large-change bound (10,000)
    world.records = Array.from({ length: count }, (_, i) => ({ ip: `45.${70 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`, score: 400, ts: now - 100, decision: null, ttl: null }));
    world.list = [];
    let handed: WeakRef<object> | undefined;
    const collections: boolean[] = [];
    const asked: unknown[] = [];
    let collected!: () => void;
    const gcDone = new Promise<void>((resolve) => (collected = resolve));
    await syncer.stop();
    await makeSyncer({
      maximumRules: 20_000,
      pageSize: 20_000,
      gc: (options) => {
        asked.push(options);
        collect(options);
        collections.push(handed?.deref() === undefined);
        collected();
      },
    });
    const inner = enforcers[0]!.enforcer;
    const watching: Enforcer = {
      ...inner,
      capacity: inner.capacity,
      sync: (desired, signal) => {
        handed = new WeakRef(desired);
        return inner.sync(desired, signal);
      },
    };
    enforcers[0] = syncer.worker('dry_run', watching);
    await settled(syncer.incremental());
    await gcDone;
    expect((await enforced()).length).toBe(count);
    // Collected once, when the list of 10,001 entries was garbage (not while the worker still held it).
    expect(collections).toEqual([true]);
    // The last-resort flavour: the freed pages go back to the system now, not when V8's memory
    // reducer finds the agent idle (which a busy host may never leave it).
    expect(asked).toEqual([{ type: 'major', execution: 'sync', flavor: 'last-resort' }]);
  });

  it('collects after every sync while the table is large: each evaluation leaves its arrays behind', async () => {
    const asked: unknown[] = [];
    await syncer.stop();
    await makeSyncer({ gc: (options) => asked.push(options) });
    // 100,000 entries below the threshold: in the table, not in the set (nothing for the enforcer).
    for (let i = 0; i < 100_000; i++) state.table.set({ key: ipv4Key(`46.${i >> 16}.${(i >> 8) & 255}.${i & 255}`), s0: 1, ts: now - 100, decision: -1, ttl: null, flags: FED });
    await settled(syncer.incremental());
    await until('first collection', () => asked.length >= 1);
    const first = asked.length;
    world.records.push({ ip: '45.70.0.99', score: 400, ts: now - 1, decision: null, ttl: null });
    await settled(syncer.incremental()); // one address more: no large change, a new evaluation all the same
    await until('second collection', () => asked.length > first);
    expect(new Set(asked)).toEqual(new Set([LAST_RESORT_GC]));
  });

  it('collects after a read-back of a large set (the reconcile loop reads every value back)', async () => {
    const asked: unknown[] = [];
    world.records = Array.from({ length: 100_000 }, (_, i) => ({ ip: `46.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, score: 400, ts: now - 100, decision: null, ttl: null }));
    world.list = [];
    await syncer.stop();
    await makeSyncer({ maximumRules: 200_000, pageSize: 100_000, gc: (options) => asked.push(options) });
    await settled(syncer.incremental());
    await until('collection after the load', () => asked.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 50)); // every collection the load asked for has run
    const before = asked.length;
    expect(await enforcers[0]!.reconcile()).toBe(false);
    await until('collection after the read-back', () => asked.length === before + 1);
  }, 60_000);

  describe('isolation: each enforcer on its own queue', () => {
    /**
     * csv whose reload command hangs for a minute (a real process) until the file `fast` exists;
     * `started` holds the shell's pid (its process group) once it runs.
     */
    async function stallingCsv() {
      const started = join(dir, 'reload-started');
      const fast = join(dir, 'fast');
      const csv = await csvEnforcer.create(
        CsvConfig.parse({ active: true, csv_logs: join(dir, 'stall.csv'), csv_reload_command: `echo $$ > ${started}; test -e ${fast} || sleep 60` }),
        { log },
      );
      const worker = syncer.worker('csv', csv);
      enforcers.push(worker);
      const reloadPid = async () => Number((await readFile(started, 'utf8').catch(() => '')).trim()) || undefined;
      return { worker, reloadPid, unstall: () => writeFile(fast, '') };
    }
    const alive = (pid: number) => {
      try {
        process.kill(-pid, 0);
        return true;
      } catch {
        return false;
      }
    };

    it('a target stalled for a minute delays no other: dry_run gets the set and then a decision within 2 s', async () => {
      const { worker: csv, reloadPid } = await stallingCsv();
      const dryRun = enforcers[0]!;
      await syncer.full();
      await dryRun.idle();
      expect(await enforced()).toEqual(all);
      const pid = await until('the csv reload running', reloadPid);
      expect(csv.busy).toMatchObject({ operation: 'sync' });

      const t0 = Date.now();
      await syncer.decision('45.70.0.1', 0, null);
      await dryRun.idle();
      const applied = Date.now() - t0;
      // No clock here: the proof that the stall delays no other is that dry_run applied the decision
      // while csv is still inside its first call (checked below).
      expect(await enforced()).toEqual(all.slice(1));
      expect((await readDryRunFile(dryRunPath))?.operations.at(-1)).toMatchObject({ op: 'apply', removed: ['45.70.0.1/32'] });
      // csv still hangs in the same call; the newer set waits for it, coalesced.
      expect(csv.busy).toMatchObject({ operation: 'sync' });
      expect(alive(pid)).toBe(true);
      console.log(`[figure] decision → dry_run applied while csv stalls: ${applied} ms`);

      // Retiring the stalled worker (the agent stopping) aborts the call and kills the reload's process group.
      await csv.close(5_000);
      expect(csv.busy).toBeUndefined();
      // SIGKILL went to the group; the processes are gone once reaped.
      await until('the reload process group gone', async () => !alive(pid), 5_000);
      enforcers.pop();
    });

    it("a call past the enforcer timeout is aborted and fails that enforcer alone; the next sync replaces its target", async () => {
      // The csv target stalls until unstalled, so the timeout only has to exceed what dry_run needs
      // for the same set on a loaded machine (500 ms failed dry_run too, 1 run in 2 under load).
      enforcerTimeoutMs = 5_000;
      const { worker: csv, reloadPid, unstall } = await stallingCsv();
      await settled(syncer.full());
      const pid = (await reloadPid())!;
      await until('the reload process group gone', async () => !alive(pid), 5_000);
      expect(csv.currentState()).toBe('failed');
      expect(csv.lastError).toBe("sync of enforcer 'csv' did not finish within 5000 ms; aborted");
      expect(csv.needsReplace).toBe(true);
      expect(enforcers[0]!.currentState()).toBe('ok');
      expect(await enforced()).toEqual(all);
      const errors = (await metrics.enforcerErrors.get()).values.map((v) => [v.labels.enforcer, v.value]);
      expect(errors).toEqual([['csv', 1]]);

      await unstall();
      await settled(syncer.full());
      expect(csv.currentState()).toBe('ok');
      expect(csv.lastError).toBeUndefined();
      expect(csvFormat.parse(await readFile(join(dir, 'stall.csv'), 'utf8'))).toEqual(all);
    });
  });

  describe('reconcile (the short loop)', () => {
    const counter = async (name: 'driftsRepaired' | 'enforcerErrors', label: string) =>
      (await metrics[name].get()).values.find((v) => v.labels.enforcer === label)?.value ?? 0;

    it('does nothing before the first sync (an empty set would withdraw)', async () => {
      expect(await settled(syncer.reconcile())).toBe(0);
      expect(await readDryRunFile(dryRunPath)).toBeUndefined();
    });

    it('an enforcer without reconcile(): a deleted or edited file is compared with the enforced set and synced again', async () => {
      await settled(syncer.full());
      expect(await settled(syncer.reconcile())).toBe(0);
      await unlink(dryRunPath);
      expect(await settled(syncer.reconcile())).toBe(1);
      expect(await enforced()).toEqual(all);
      expect((await readDryRunFile(dryRunPath))?.operations.map((o) => o.op)).toEqual(['sync', 'sync']);
      // Someone adds an address by hand: not in the enforced set, so the set is re-asserted.
      const file = (await readDryRunFile(dryRunPath))!;
      await writeFile(dryRunPath, JSON.stringify({ ...file, enforced: [...file.enforced, '45.99.0.1/32'] }));
      expect(await settled(syncer.reconcile())).toBe(1);
      expect(await enforced()).toEqual(all);
      expect(await counter('driftsRepaired', 'dry_run')).toBe(2);
      expect(await settled(syncer.reconcile())).toBe(0);
    });

    it('an enforcer with reconcile() (csv): the deleted file comes back, counted per enforcer', async () => {
      const csvPath = join(dir, 'list.csv');
      const csv = await csvEnforcer.create(CsvConfig.parse({ active: true, csv_logs: csvPath, csv_reload_command: '' }), { log });
      enforcers.push(syncer.worker('csv', csv));
      await settled(syncer.full());
      const written = await readFile(csvPath, 'utf8');
      expect(csvFormat.parse(written)).toEqual(all);
      await unlink(csvPath);
      expect(await settled(syncer.reconcile())).toBe(1);
      expect(await readFile(csvPath, 'utf8')).toBe(written);
      expect(await counter('driftsRepaired', 'csv')).toBe(1);
      expect(await counter('driftsRepaired', 'dry_run')).toBe(0);
    });

    it('an enforcer whose read-back fails is replaced at once from the local state, without asking the server', async () => {
      const inner = enforcers[0]!.enforcer;
      const flaky: Enforcer = {
        ...inner,
        capacity: inner.capacity,
        list: async () => {
          throw new Error('target unreachable');
        },
      };
      enforcers[0] = syncer.worker('dry_run', flaky);
      await settled(syncer.full());
      await unlink(dryRunPath);
      await app.close(); // the server is gone: the set comes from the local state
      expect(await settled(syncer.reconcile())).toBe(0);
      expect(await counter('enforcerErrors', 'dry_run')).toBe(1);
      expect(enforcers[0].needsReplace).toBe(false);
      expect(await enforced()).toEqual(all);
      expect((await readDryRunFile(dryRunPath))?.operations.map((o) => o.op)).toEqual(['sync', 'sync']);
    });

    it('does nothing while withdrawn (running = no)', async () => {
      await settled(syncer.full());
      await settled(syncer.withdraw());
      await unlink(dryRunPath);
      expect(await settled(syncer.reconcile())).toBe(0);
      expect(await readDryRunFile(dryRunPath)).toBeUndefined();
    });
  });
});
