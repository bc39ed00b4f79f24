import { until } from '@rampart/plugin-kit/testing';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DryRunConfig, dryRunEnforcer, readDryRunFile } from '@rampart/enforcer-dry-run';
import type { Enforcer, EnforcerDefinition } from '@rampart/plugin-kit';
import type { PlannedEnforcer } from '../src/config/plugins.ts';
import { ipv4Key } from '@rampart/contracts';
import { EnforcerSlots } from '../src/runtime/enforcer-slots.ts';
import { membersDigest } from '../src/sync/enforcer-worker.ts';
import { createMetrics } from '../src/runtime/metrics.ts';
import { ipv4SetOps, toEntries, type KeySet } from '../src/sync/block-state.ts';
import { EnforcerWorker } from '../src/sync/enforcer-worker.ts';

/*
 * The enforcer slots against the real dry-run enforcer (a file): what a settings change leaves
 * in the old target and the new one, read back from the files.
 */

const BLACKLISTED: KeySet = { keys: Float64Array.of(ipv4Key('45.61.7.10/32')), ranks: Uint16Array.of(900) };


describe('EnforcerSlots with the dry-run enforcer', () => {
  let dir: string;
  let slots: EnforcerSlots | undefined;
  let created = 0;
  let metrics: ReturnType<typeof createMetrics>;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rampart-slots-'));
    created = 0;
  });
  afterEach(async () => {
    await slots?.close();
    await rm(dir, { recursive: true, force: true });
  });

  function make(retry = { baseMs: 10, maxMs: 40 }) {
    // The syncer's lock, reduced to running tasks one after the other.
    let chain: Promise<unknown> = Promise.resolve();
    const serialize = <T>(task: () => Promise<T>): Promise<T> => {
      const run = chain.then(task, task);
      chain = run.catch(() => undefined);
      return run;
    };
    const log = pino({ level: 'silent' });
    metrics = createMetrics();
    const worker = (label: string, enforcer: Enforcer) =>
      new EnforcerWorker(label, enforcer, { log, metrics, timeoutMs: () => 5_000, ...ipv4SetOps });
    slots = new EnforcerSlots({ log, metrics, serialize, worker, onCreated: () => (created += 1), retry });
    return slots;
  }

  const dryRun = (file: string, definition: EnforcerDefinition<DryRunConfig> = dryRunEnforcer): PlannedEnforcer => ({
    label: 'dry_run',
    definition: definition as EnforcerDefinition<unknown>,
    config: DryRunConfig.parse({ active: true, path: join(dir, file) }),
    kind: 'ipv4',
  });

  /** What the syncer does at its next sync: every worker gets the set (a replaced one, whole). */
  async function syncAll(s: EnforcerSlots, set: KeySet) {
    await Promise.all(s.workers.map((w) => w.submit(set)));
  }

  it('a changed target path withdraws the old file\'s entries, and the new file gets the set', async () => {
    const s = make();
    await s.apply([dryRun('old.json')], true);
    await syncAll(s, BLACKLISTED);
    expect((await readDryRunFile(join(dir, 'old.json')))?.enforced).toEqual(['45.61.7.10/32']);

    await s.apply([dryRun('new.json')], true);
    const old = await readDryRunFile(join(dir, 'old.json'));
    expect(old?.enforced).toEqual([]);
    expect(old?.operations.at(-1)?.op).toBe('withdraw');
    await syncAll(s, BLACKLISTED);
    expect((await readDryRunFile(join(dir, 'new.json')))?.enforced).toEqual(['45.61.7.10/32']);
    expect(s.live.map((e) => e.label)).toEqual(['dry_run']);
  });

  it('a removed slot withdraws; running = no withdraws and keeps the instance; running = yes hands the set back', async () => {
    const s = make();
    await s.apply([dryRun('a.json')], true);
    await syncAll(s, BLACKLISTED);
    await s.apply([dryRun('a.json')], false);
    expect((await readDryRunFile(join(dir, 'a.json')))?.enforced).toEqual([]);
    expect(s.live).toHaveLength(1);
    await s.apply([dryRun('a.json')], true);
    expect(s.workers[0]!.needsReplace).toBe(true);
    await syncAll(s, BLACKLISTED);
    expect((await readDryRunFile(join(dir, 'a.json')))?.enforced).toEqual(['45.61.7.10/32']);
    await s.apply([], true);
    expect((await readDryRunFile(join(dir, 'a.json')))?.enforced).toEqual([]);
    expect(s.live).toEqual([]);
  });

  it('a failed create() is reported in health and retried with back-off until it works', async () => {
    let failures = 3;
    const flaky: EnforcerDefinition<DryRunConfig> = {
      ...dryRunEnforcer,
      create: async (config, ctx) => {
        if (failures > 0) {
          failures -= 1;
          throw new Error('backend unreachable');
        }
        return dryRunEnforcer.create(config, ctx);
      },
    };
    const s = make();
    await s.apply([dryRun('flaky.json', flaky)], true);
    expect(s.live).toEqual([]);
    expect(s.health()).toEqual([
      expect.objectContaining({ label: 'dry_run', healthy: false, error: 'create_failed', detail: 'backend unreachable', attempts: 1 }),
    ]);
    await until('the enforcer created by a retry', () => created === 1);
    expect(failures).toBe(0);
    expect(s.health()).toEqual([{ label: 'dry_run', state: 'degraded', healthy: false, enforced: 0, cut: 0 }]);
    await syncAll(s, BLACKLISTED);
    expect(s.health()).toEqual([
      {
        label: 'dry_run',
        state: 'ok',
        healthy: true,
        enforced: 1,
        cut: 0,
        last_applied_at: expect.any(Number),
        read_back: { held: 1, digest: membersDigest(['45.61.7.10/32']), expected: 1, differs: false, at: expect.any(Number) },
      },
    ]);
    expect((await readDryRunFile(join(dir, 'flaky.json')))?.enforced).toEqual(['45.61.7.10/32']);
  });

  it('a retried creation while running = no clears its target instead of waiting for the set', async () => {
    const file = join(dir, 'paused.json');
    // What a previous run of the same configuration left behind.
    const previous = await dryRunEnforcer.create(DryRunConfig.parse({ active: true, path: file }), { log: pino({ level: 'silent' }) });
    await previous.sync(toEntries(BLACKLISTED));
    await previous.close();
    let failures = 1;
    const flaky: EnforcerDefinition<DryRunConfig> = {
      ...dryRunEnforcer,
      create: async (config, ctx) => {
        if (failures-- > 0) throw new Error('backend unreachable');
        return dryRunEnforcer.create(config, ctx);
      },
    };
    const s = make();
    await s.apply([dryRun('paused.json', flaky)], false);
    expect(s.health()[0]).toMatchObject({ error: 'create_failed' });
    const cleared = await until('the retried instance withdrawing', async () => {
      const read = await readDryRunFile(file);
      return read?.operations.at(-1)?.op === 'withdraw' && read;
    });
    expect(cleared.enforced).toEqual([]);
    expect(created).toBe(0);
  });

  it('a configured enforcer that cannot run is reported failed; one that had an instance withdraws it', async () => {
    const s = make();
    await s.apply([dryRun('r.json')], true);
    await syncAll(s, BLACKLISTED);
    const refused = [
      { label: 'dns_e', error: 'no_plugin' as const, detail: "no enforcer for 'dns_e'; known enforcers: csv, dry_run" },
      { label: 'dry_run', error: 'config_invalid' as const, detail: 'ips.dry_run.path: Too small: expected string to have >=1 characters' },
    ];
    await s.apply([], true, refused);
    expect(s.live).toEqual([]);
    expect((await readDryRunFile(join(dir, 'r.json')))?.enforced).toEqual([]);
    expect(s.health()).toEqual([
      { label: 'dns_e', state: 'failed', healthy: false, enforced: 0, cut: 0, error: 'no_plugin', detail: "no enforcer for 'dns_e'; known enforcers: csv, dry_run" },
      { label: 'dry_run', state: 'failed', healthy: false, enforced: 0, cut: 0, error: 'config_invalid', detail: 'ips.dry_run.path: Too small: expected string to have >=1 characters' },
    ]);
    // Fixed by the next settings: the refusal is gone and the slot is back.
    await s.apply([dryRun('r.json')], true, []);
    await syncAll(s, BLACKLISTED);
    expect(s.health()).toEqual([expect.objectContaining({ label: 'dry_run', state: 'ok', enforced: 1 })]);
  });

  it('the back-off doubles up to its cap, and a slot no longer wanted stops being retried', async () => {
    let attempts = 0;
    const broken: EnforcerDefinition<DryRunConfig> = {
      ...dryRunEnforcer,
      create: async () => {
        attempts += 1;
        throw new Error('no such table');
      },
    };
    const s = make({ baseMs: 60_000, maxMs: 240_000 });
    await s.apply([dryRun('x.json', broken)], true);
    expect(s.health()[0]).toMatchObject({ attempts: 1, next_attempt_in_seconds: 60 });
    // A settings change retries at once and keeps counting.
    await s.apply([dryRun('x.json', broken)], true);
    expect(s.health()[0]).toMatchObject({ attempts: 2, next_attempt_in_seconds: 120 });
    await s.apply([dryRun('x.json', broken)], true);
    await s.apply([dryRun('x.json', broken)], true);
    expect(s.health()[0]).toMatchObject({ attempts: 4, next_attempt_in_seconds: 240 });
    await s.apply([], true);
    expect(s.health()).toEqual([]);
    expect(attempts).toBe(4);
  });

  it("an enforcer's own status is in its health, and its parts are exported by part", async () => {
    const withParts: EnforcerDefinition<DryRunConfig> = {
      ...dryRunEnforcer,
      create: async (config, ctx) =>
        Object.assign(await dryRunEnforcer.create(config, ctx), {
          status: () => ({ parts: [{ name: 'edl-a', enforced: 3, cut: 2, path: '/feeds/edl-a.txt' }], url: 'https://agent:8443/feeds/' }),
        }),
    };
    const s = make();
    metrics.provideStates({ enforcers: () => s.health(), sources: () => [] });
    await s.apply([dryRun('p.json', withParts)], true);
    expect(s.health()[0]!.status).toEqual({ parts: [{ name: 'edl-a', enforced: 3, cut: 2, path: '/feeds/edl-a.txt' }], url: 'https://agent:8443/feeds/' });
    const text = await metrics.registry.metrics();
    expect(text).toContain('rampart_agent_enforcer_part_entries{enforcer="dry_run",part="edl-a"} 3');
    expect(text).toContain('rampart_agent_enforcer_part_cut_entries{enforcer="dry_run",part="edl-a"} 2');
    // Enforcers without parts add no series.
    await s.apply([dryRun('q.json')], true);
    expect(s.health()[0]!.status).toBeUndefined();
    expect(await metrics.registry.metrics()).not.toContain('rampart_agent_enforcer_part_entries{');
  });
});
