import { afterEach, describe, expect, it, vi } from 'vitest';
import { Scheduler } from '../src/runtime/scheduler.ts';

const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn(), child: () => log } as never;

describe('Scheduler', () => {
  afterEach(() => vi.useRealTimers());

  it('takes 5 fields, or 6 with seconds first, and refuses anything else', () => {
    const s = new Scheduler(log);
    const job = { name: 'sync', run: async () => {} };
    for (const ok of ['*/5 * * * *', '0 */2 * * *', '*/30 * * * * *', '0 0 1 * MON']) expect(() => s.set(ok, job)).not.toThrow();
    for (const bad of ['* * * *', '0 0 0 1 1 * 2030', '61 * * * *', '*/x * * * *', 'every minute']) expect(() => s.set(bad, job), bad).toThrow(/invalid cron expression for sync/);
    s.stop();
  });

  it('runs a job on its schedule, never overlapping itself, and logs its failures', async () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00.500Z') });
    const s = new Scheduler(log);
    let running = 0;
    let started = 0;
    let release: () => void = () => {};
    s.set('* * * * * *', {
      name: 'slow',
      run: () => {
        started++;
        running++;
        return new Promise<void>((resolve) => (release = () => { running--; resolve(); }));
      },
    });
    await vi.advanceTimersByTimeAsync(3000);
    expect(started).toBe(1); // the seconds while the first run is going are skipped
    release();
    await vi.advanceTimersByTimeAsync(1000);
    expect(started).toBe(2);
    expect(running).toBe(1);
    release();
    s.set('* * * * * *', { name: 'failing', run: async () => Promise.reject(new Error('boom')) });
    await vi.advanceTimersByTimeAsync(1000);
    expect((log as unknown as { warn: ReturnType<typeof vi.fn> }).warn).toHaveBeenCalledWith(expect.objectContaining({ job: 'failing' }), 'scheduled job failed');
    s.stop();
    const before = started;
    await vi.advanceTimersByTimeAsync(5000);
    expect(started).toBe(before);
  });

  it('fires only when day of month and day of week both match, as node-cron did', async () => {
    // Thursday 2026-01-01, just before midnight: the 2nd is a Friday, so either-or would fire.
    vi.useFakeTimers({ now: new Date(2026, 0, 1, 23, 59, 59, 500) });
    const s = new Scheduler(log);
    const runs: string[] = [];
    s.set('0 0 2 * MON', { name: 'and', run: async () => void runs.push('and') });
    s.set('0 0 2 * *', { name: 'dom', run: async () => void runs.push('dom') });
    await vi.advanceTimersByTimeAsync(2000);
    expect(runs).toEqual(['dom']);
    s.stop();
  });
});
