import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineSource, type Detection, type SourceDefinition } from '@rampart/plugin-kit';
import { JOURNAL_REMOTE, journalReadToEnd, syslogToJournal, systemGate, writeJournal } from '@rampart/plugin-kit/testing';
import { sshdSource } from '@rampart/source-sshd';
import { Supervisor } from '../src/runtime/supervisor.ts';
import { createMetrics } from '../src/runtime/metrics.ts';
import { memoryOffsetStore } from '@rampart/plugin-kit';

describe('supervisor', () => {
  it('restarts a failing source with back-off, passes its detections on, and stops it', async () => {
    let starts = 0;
    const flaky = defineSource({
      name: 'flaky',
      serves: 'json_source',
      configSchema: z.object({}),
      createParser: () => ({ push: () => [], flush: () => [] }),
      start: (_config, _mode, ctx) => {
        starts += 1;
        ctx.emit({ ts: starts, ip: `45.80.0.${starts}`, source: 'json_source', kind: 'test', attempts: 1 });
        if (starts < 3) return { done: Promise.reject(new Error(`boom ${starts}`)) };
        return { done: new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve())) };
      },
    });
    const metrics = createMetrics();
    const seen: Detection[] = [];
    const supervisor = new Supervisor({
      log: pino({ level: 'silent' }),
      metrics,
      offsets: memoryOffsetStore(),
      emit: (_l, d) => seen.push(d),
      backoff: { baseMs: 5, maxMs: 20 },
      healthyAfterMs: 300,
    });
    await supervisor.update([{ label: 'json_source', definition: flaky, config: {}, mode: 'normal' }]);
    const deadline = Date.now() + 10_000;
    while (starts < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(starts).toBe(3);
    expect(seen.map((d) => d.ip)).toEqual(['45.80.0.1', '45.80.0.2', '45.80.0.3']);
    expect((await metrics.sourceRestarts.get()).values).toEqual([{ value: 2, labels: { source: 'json_source' } }]);
    expect(supervisor.labels).toEqual(['json_source']);
    // Running again after two failures: degraded, with the last error, until the run has lasted healthyAfterMs.
    expect(supervisor.health()).toEqual([{ label: 'json_source', state: 'degraded', restarts: 2, last_error: 'boom 2', last_error_at: expect.any(Number) }]);
    for (const end = Date.now() + 10_000; supervisor.health()[0]!.state !== 'ok' && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
    expect(supervisor.health()).toEqual([{ label: 'json_source', state: 'ok', restarts: 2, last_error: 'boom 2', last_error_at: expect.any(Number) }]);
    // update() resolves once the source's restart loop has returned: nothing can start it again.
    await supervisor.update([]);
    expect(supervisor.labels).toEqual([]);
    expect(starts).toBe(3);
  });

  it('a source failing three times in a row is failed', async () => {
    let starts = 0;
    const broken = defineSource({
      name: 'broken',
      serves: 'json_source',
      configSchema: z.object({}),
      createParser: () => ({ push: () => [], flush: () => [] }),
      start: () => {
        starts += 1;
        return { done: Promise.reject(new Error(`cannot open the log (${starts})`)) };
      },
    });
    const supervisor = new Supervisor({ log: pino({ level: 'silent' }), metrics: createMetrics(), offsets: memoryOffsetStore(), emit: () => undefined, backoff: { baseMs: 5, maxMs: 5 } });
    await supervisor.update([{ label: 'json_source', definition: broken, config: {}, mode: 'normal' }]);
    for (const end = Date.now() + 10_000; starts < 4 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
    expect(supervisor.health()[0]).toMatchObject({ label: 'json_source', state: 'failed', last_error: expect.stringMatching(/^cannot open the log/) });
    await supervisor.stop();
  });
});

describe.skipIf(systemGate('supervised journal source', { commands: ['journalctl', JOURNAL_REMOTE] }))('supervisor with a journal source', () => {
  it('gives the source the state directory, where its journal cursor is kept across restarts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rampart-supervised-journal-'));
    try {
      const journalDir = join(dir, 'journal');
      mkdirSync(journalDir);
      const line = (s: number, ip: string) => `Mar  1 10:00:0${s} h sshd[${100 + s}]: Invalid user oracle from ${ip} port 4242`;
      const readAt = Date.parse('2025-03-02T00:00:00Z') / 1000;
      await writeJournal(join(journalDir, 'x.journal'), syslogToJournal([line(1, '45.80.1.1')], readAt, () => ({ _SYSTEMD_UNIT: 'ssh.service' })));
      const config = sshdSource.configSchema.parse({ active: true, ssh_log_location: 'journal:ssh.service', options: { journal_directory: journalDir, start_at: 'beginning' } });
      const run = async (until: number, seen: Detection[]) => {
        const supervisor = new Supervisor({ log: pino({ level: 'silent' }), metrics: createMetrics(), offsets: memoryOffsetStore(), stateDir: dir, emit: (_l, d) => seen.push(d) });
        await supervisor.update([{ label: 'ssh_log', definition: sshdSource as SourceDefinition<unknown>, config, mode: 'normal' }]);
        // Until the source has read the journal to its end (its saved cursor is the last entry's).
        const readToEnd = () => journalReadToEnd(dir, 'journal:ssh.service', { journal_directory: journalDir });
        for (const end = Date.now() + 20_000; !(seen.length >= until && readToEnd()) && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
        await supervisor.stop();
      };
      const first: Detection[] = [];
      await run(1, first);
      expect(first.map((d) => d.ip)).toEqual(['45.80.1.1']);
      expect(readdirSync(join(dir, 'journal')).filter((n) => n.endsWith('.cursor'))).toHaveLength(1);
      await writeJournal(join(journalDir, 'x.journal'), syslogToJournal([line(2, '45.80.1.2')], readAt, () => ({ _SYSTEMD_UNIT: 'ssh.service' })));
      const second: Detection[] = [];
      await run(1, second);
      expect(second.map((d) => d.ip)).toEqual(['45.80.1.2']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
