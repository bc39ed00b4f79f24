import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
import { BlockState } from '../src/sync/block-state.ts';
import { FeedStateFile } from '../src/sync/feed-state.ts';
import { NeverBlock } from '../src/sync/never-block.ts';
import { SyncRefusedError, Syncer, type ActiveEnforcer } from '../src/sync/syncer.ts';
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
  let enforcers: ActiveEnforcer[];
  let force = false;
  let metrics: AgentMetrics;

  async function makeSyncer() {
    const port = (app.server.address() as AddressInfo).port;
    state = new BlockState(new NeverBlock({ ownAddresses: [], controlPlane: [], reservedIps: [], allowList: [] }));
    const enforcer = await dryRunEnforcer.create(DryRunConfig.parse({ active: true, path: dryRunPath }), { log });
    enforcers = [{ label: 'dry_run', enforcer, needsReplace: true }];
    metrics = createMetrics();
    syncer = new Syncer({
      client: new RampartClient({ baseUrl: `http://127.0.0.1:${port}/api/v1`, apiKey: 'k', retries: 0 }),
      state,
      feedState: new FeedStateFile(dir),
      enforcers: () => enforcers,
      policy: () => ({ threshold: 100, maximumRules: 1000 }),
      gaid: () => undefined,
      log,
      metrics,
      options: () => ({ pageSize: 3, forceSync: force, maxRemovalFraction: 0.5, minGuardedRemovals: 2, saveEveryMs: 0 }),
    });
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'syncer-'));
    dryRunPath = join(dir, 'dry-run.json');
    force = false;
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
    app.post('/api/v1/agents/feedback', async () => null);
    await app.listen({ host: '127.0.0.1', port: 0 });
    await makeSyncer();
  });
  afterEach(async () => {
    await syncer.stop();
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });

  const enforced = async () => (await readDryRunFile(dryRunPath))?.enforced ?? [];
  const all = Array.from({ length: 8 }, (_, i) => `45.70.0.${i + 1}/32`);

  it('a full sync walks the feed and the paged list and replaces the enforcer set', async () => {
    await syncer.full();
    expect(await enforced()).toEqual(all);
    expect(syncer.cursor).toBe(now - 93);
  });

  it('refuses an empty server list while rules exist, unless forced', async () => {
    await syncer.full();
    world.list = [];
    await expect(syncer.full()).rejects.toMatchObject({ reason: 'empty_list' });
    expect(await enforced()).toEqual(all);
    await syncer.full(true);
    // Forced: the list no longer marks them, but their feed records still block them.
    expect(await enforced()).toEqual(all);
  });

  it('a partial pull (a failing list page) changes nothing', async () => {
    await syncer.full();
    world.failListPage2 = true;
    world.records = world.records.map((r) => ({ ...r, decision: 0 as const, ts: r.ts + 1000 }));
    await expect(syncer.full()).rejects.toMatchObject({ status: 503 });
    expect(await enforced()).toEqual(all);
  });

  it('refuses a sync that removes more than half the set; applies it when forced', async () => {
    await syncer.full();
    // Five of eight whitelisted in the feed: 5 > 8 * 0.5.
    for (const r of world.records.slice(0, 5)) Object.assign(r, { decision: 0, ts: r.ts + 1000 });
    const err = await syncer.incremental().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SyncRefusedError);
    expect(err).toMatchObject({ reason: 'mass_removal', detail: { previous: 8, remove: 5 } });
    expect(await enforced()).toEqual(all);
    force = true;
    await syncer.incremental();
    expect(await enforced()).toEqual(all.slice(5));
  });

  it('a small removal is applied as a diff; the cursor and records survive a restart', async () => {
    await syncer.full();
    Object.assign(world.records[0]!, { decision: 0, ts: now + 5 });
    await syncer.incremental();
    expect(await enforced()).toEqual(all.slice(1));
    expect((await readDryRunFile(dryRunPath))?.operations.at(-1)).toMatchObject({ op: 'apply', removed: ['45.70.0.1/32'], added: [] });
    await syncer.stop();
    await makeSyncer();
    await syncer.restore();
    expect(syncer.cursor).toBe(now + 5);
    expect(state.table.size).toBe(8);
  });

  it('withdraw removes every rule and resume brings them back', async () => {
    await syncer.full();
    await syncer.withdraw();
    expect(await enforced()).toEqual([]);
    await syncer.incremental();
    expect(await enforced()).toEqual([]);
    syncer.resume();
    await syncer.incremental();
    expect(await enforced()).toEqual(all);
  });

  it('keeps what each enforcer reports enforcing (a capacity cut included) for feedback and metrics', async () => {
    const small = await dryRunEnforcer.create(DryRunConfig.parse({ active: true, path: join(dir, 'small.json'), capacity: 5 }), { log });
    enforcers.push({ label: 'small', enforcer: small, needsReplace: true });
    await syncer.full();
    expect(enforcers.map((e) => [e.label, e.enforced, e.cut])).toEqual([
      ['dry_run', 8, 0],
      ['small', 5, 3],
    ]);
    const gauge = async (name: 'enforcerEntries' | 'enforcerCut') => Object.fromEntries((await metrics[name].get()).values.map((v) => [v.labels.enforcer, v.value]));
    expect(await gauge('enforcerEntries')).toEqual({ dry_run: 8, small: 5 });
    expect(await gauge('enforcerCut')).toEqual({ dry_run: 0, small: 3 });
    await syncer.withdraw();
    expect(await gauge('enforcerEntries')).toEqual({ dry_run: 0, small: 0 });
  });

  describe('reconcile (the short loop)', () => {
    const counter = async (name: 'driftsRepaired' | 'enforcerErrors', label: string) =>
      (await metrics[name].get()).values.find((v) => v.labels.enforcer === label)?.value ?? 0;

    it('does nothing before the first sync (an empty set would withdraw)', async () => {
      expect(await syncer.reconcile()).toBe(0);
      expect(await readDryRunFile(dryRunPath)).toBeUndefined();
    });

    it('an enforcer without reconcile(): a deleted or edited file is compared with the enforced set and synced again', async () => {
      await syncer.full();
      expect(await syncer.reconcile()).toBe(0);
      await unlink(dryRunPath);
      expect(await syncer.reconcile()).toBe(1);
      expect(await enforced()).toEqual(all);
      expect((await readDryRunFile(dryRunPath))?.operations.map((o) => o.op)).toEqual(['sync', 'sync']);
      // Someone adds an address by hand: not in the enforced set, so the set is re-asserted.
      const file = (await readDryRunFile(dryRunPath))!;
      await writeFile(dryRunPath, JSON.stringify({ ...file, enforced: [...file.enforced, '45.99.0.1/32'] }));
      expect(await syncer.reconcile()).toBe(1);
      expect(await enforced()).toEqual(all);
      expect(await counter('driftsRepaired', 'dry_run')).toBe(2);
      expect(await syncer.reconcile()).toBe(0);
    });

    it('an enforcer with reconcile() (csv): the deleted file comes back, counted per enforcer', async () => {
      const csvPath = join(dir, 'list.csv');
      const csv = await csvEnforcer.create(CsvConfig.parse({ active: true, csv_logs: csvPath, csv_reload_command: '' }), { log });
      enforcers.push({ label: 'csv', enforcer: csv, needsReplace: true });
      await syncer.full();
      const written = await readFile(csvPath, 'utf8');
      expect(csvFormat.parse(written)).toEqual(all);
      await unlink(csvPath);
      expect(await syncer.reconcile()).toBe(1);
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
      enforcers[0] = { label: 'dry_run', enforcer: flaky, needsReplace: true };
      await syncer.full();
      await unlink(dryRunPath);
      await app.close(); // the server is gone: the set comes from the local state
      expect(await syncer.reconcile()).toBe(0);
      expect(await counter('enforcerErrors', 'dry_run')).toBe(1);
      expect(enforcers[0].needsReplace).toBe(false);
      expect(await enforced()).toEqual(all);
      expect((await readDryRunFile(dryRunPath))?.operations.map((o) => o.op)).toEqual(['sync', 'sync']);
    });

    it('does nothing while withdrawn (running = no)', async () => {
      await syncer.full();
      await syncer.withdraw();
      await unlink(dryRunPath);
      expect(await syncer.reconcile()).toBe(0);
      expect(await readDryRunFile(dryRunPath)).toBeUndefined();
    });
  });
});
