import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ipv4Key } from '@rampart/contracts';
import { CsvConfig, csvEnforcer, csvFormat } from '@rampart/enforcer-csv';
import { createMetrics, type AgentMetrics } from '../src/runtime/metrics.ts';
import { ipv4SetOps, type KeySet } from '../src/sync/block-state.ts';
import { EnforcerWorker, membersDigest } from '../src/sync/enforcer-worker.ts';

/*
 * The states one enforcer goes through (ok / degraded / failed), against the real csv enforcer:
 * its reload command fails while a marker file exists, and its healthcheck fails while its
 * directory is gone.
 */

const set = (...cidrs: string[]): KeySet => ({ keys: Float64Array.from(cidrs.map((c) => ipv4Key(c)).sort((a, b) => a - b)), ranks: Uint16Array.from(cidrs.map(() => 500)) });

describe('EnforcerWorker states with the csv enforcer', () => {
  let dir: string;
  let listDir: string;
  let failMarker: string;
  let metrics: AgentMetrics;
  let worker: EnforcerWorker;
  let settled: string[];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rampart-worker-'));
    listDir = join(dir, 'lists');
    failMarker = join(dir, 'fail');
    await mkdir(listDir);
    metrics = createMetrics();
    settled = [];
    const csv = await csvEnforcer.create(
      CsvConfig.parse({ active: true, csv_logs: join(listDir, 'list.csv'), csv_reload_command: `test ! -e ${failMarker} || { echo consumer refused >&2; exit 3; }` }),
      { log: pino({ level: 'silent' }) },
    );
    worker = new EnforcerWorker('csv', csv, {
      log: pino({ level: 'silent' }),
      metrics,
      timeoutMs: () => 10_000,
      ...ipv4SetOps,
      onSettled: (w) => settled.push(w.currentState()),
    });
  });
  afterEach(async () => {
    await worker.close(1000);
    await rm(dir, { recursive: true, force: true });
  });

  const file = async () => csvFormat.parse(await readFile(join(listDir, 'list.csv'), 'utf8'));
  const errors = async () => (await metrics.enforcerErrors.get()).values.find((v) => v.labels.enforcer === 'csv')?.value ?? 0;

  it('degraded until it holds the set, then ok; a failed call is failed and the next success replaces the target whole', async () => {
    expect(worker.currentState()).toBe('degraded');
    expect(await worker.checkHealth()).toEqual({ ok: true });
    expect(worker.currentState()).toBe('degraded');

    await worker.submit(set('45.70.0.1/32', '45.70.0.2/32'));
    expect(worker.currentState()).toBe('ok');
    expect([worker.enforced, worker.cut, worker.needsReplace]).toEqual([2, 0, false]);
    expect(await file()).toEqual(['45.70.0.1/32', '45.70.0.2/32']);

    await writeFile(failMarker, '');
    await worker.submit(set('45.70.0.1/32', '45.70.0.3/32'));
    expect(worker.currentState()).toBe('failed');
    expect(worker.lastError).toBe('command exited with 3: consumer refused');
    expect([worker.failures, worker.needsReplace, await errors()]).toEqual([1, true, 1]);
    // The consumer still reads the old list: the file was put back.
    expect(await file()).toEqual(['45.70.0.1/32', '45.70.0.2/32']);

    await unlink(failMarker);
    await worker.submit(set('45.70.0.1/32', '45.70.0.3/32'));
    expect(worker.currentState()).toBe('ok');
    expect([worker.lastError, worker.failures, worker.enforced]).toEqual([undefined, 0, 2]);
    expect(await file()).toEqual(['45.70.0.1/32', '45.70.0.3/32']);
    expect(settled).toEqual(['ok', 'failed', 'ok']);
  });

  it('reads its target back after each apply and reconcile: what was deleted behind its back is reported (degraded), repaired, then ok', async () => {
    const members = ['45.70.0.1/32', '45.70.0.2/32', '45.70.0.3/32'];
    await worker.submit(set(...members));
    expect(worker.attested).toEqual({ held: 3, digest: membersDigest(members), expected: 3, differs: false, at: expect.any(Number) });
    expect(membersDigest(members)).toBe(createHash('sha256').update('45.70.0.1/32\n45.70.0.2/32\n45.70.0.3/32\n').digest('hex'));

    const read: { held: number; differs: boolean; state: string }[] = [];
    worker = new EnforcerWorker('csv', worker.enforcer, {
      log: pino({ level: 'silent' }),
      metrics,
      timeoutMs: () => 10_000,
      ...ipv4SetOps,
      onSettled: (w) => read.push({ held: w.attested!.held, differs: w.attested!.differs, state: w.currentState() }),
    });
    await worker.submit(set(...members));
    // Someone else rewrites the list with one entry left.
    await writeFile(join(listDir, 'list.csv'), csvFormat.render([{ value: '45.70.0.2/32', score: 500 }]));
    expect(await worker.reconcile()).toBe(true);
    // Reported as read before the repair (degraded), then as read after it.
    expect(read.slice(1)).toEqual([
      { held: 1, differs: true, state: 'degraded' },
      { held: 3, differs: false, state: 'ok' },
    ]);
    expect(await file()).toEqual(members);
    expect(worker.attested).toMatchObject({ held: 3, digest: membersDigest(members), differs: false });
    expect(await worker.reconcile()).toBe(false);
    expect(read.length).toBe(4);
  });

  it('a target capped by its capacity holds what the cap allows: not a difference', async () => {
    const capped = await csvEnforcer.create(CsvConfig.parse({ active: true, csv_logs: join(listDir, 'capped.csv'), csv_reload_command: '', options: { max_entries: 2 } }), { log: pino({ level: 'silent' }) });
    const w = new EnforcerWorker('csv', capped, { log: pino({ level: 'silent' }), metrics, timeoutMs: () => 10_000, ...ipv4SetOps });
    await w.submit(set('45.70.0.1/32', '45.70.0.2/32', '45.70.0.3/32'));
    expect([w.enforced, w.cut, w.currentState()]).toEqual([2, 1, 'ok']);
    expect(w.attested).toMatchObject({ held: 2, expected: 2, differs: false });
    expect(await w.reconcile()).toBe(false);
    await w.close(1000);
  });

  it('a failing healthcheck degrades an enforcing target; it is ok again once the check passes', async () => {
    await worker.submit(set('45.70.0.1/32'));
    expect(worker.currentState()).toBe('ok');
    await rm(listDir, { recursive: true });
    const health = await worker.checkHealth();
    expect(health.ok).toBe(false);
    expect(health.detail).toMatch(/^directory of .*list\.csv not writable: ENOENT/);
    expect(worker.currentState()).toBe('degraded');
    expect(worker.enforced).toBe(1);
    await mkdir(listDir);
    expect(await worker.checkHealth()).toEqual({ ok: true });
    expect(worker.currentState()).toBe('ok');
  });

  it('withdraw empties the target and leaves it awaiting the set (degraded)', async () => {
    await worker.submit(set('45.70.0.1/32'));
    await worker.withdraw();
    expect(await file()).toEqual([]);
    expect([worker.enforced, worker.needsReplace, worker.currentState()]).toEqual([0, true, 'degraded']);
    await worker.submit(set('45.70.0.9/32'));
    expect([await file(), worker.currentState()]).toEqual([['45.70.0.9/32'], 'ok']);
  });
});
