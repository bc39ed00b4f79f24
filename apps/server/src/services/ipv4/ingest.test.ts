import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { IngestOptions, IngestProgress, IngestResult, Ipv4ReportItem } from '../../store/ipv4-ingest.ts';
import { ReservedInBatchError } from '../../store/reserved-in-batch.ts';
import type { EventBus } from '../events.ts';
import { ReportBatcher } from './ingest.ts';

const item = (n: number): Ipv4ReportItem => ({
  orgId: 1,
  network: `203.0.113.${n}/32`,
  isNetwork: false,
  gid: `RMP-RULE-GID-T${n}`,
  confidence: 0.5,
  source: 'ssh',
  notes: null,
  addReport: true,
  decision: null,
  ipInfo: null,
});

/** A report transaction the test steps through: each batch waits at its statements and at its commit. */
function steppedIngest() {
  const batches: Array<{ networks: string[]; allOrNothing: boolean; finishStatements(): void; finishCommit(fail?: Error): void }> = [];
  let waiters: Array<() => void> = [];
  const ingest = {
    concurrent: true,
    async ingest(items: Ipv4ReportItem[], _rules: unknown, _now: number, progress: IngestProgress = {}, options: IngestOptions = {}): Promise<IngestResult> {
      progress.begun?.();
      progress.locked?.();
      let finishStatements!: () => void;
      let finishCommit!: (fail?: Error) => void;
      const statements = new Promise<void>((r) => (finishStatements = r));
      const commit = new Promise<void>((resolve, reject) => (finishCommit = (fail) => (fail ? reject(fail) : resolve())));
      batches.push({ networks: items.map((i) => i.network), allOrNothing: options.allOrNothing === true, finishStatements, finishCommit });
      for (const w of waiters) w();
      waiters = [];
      await statements;
      progress.committing?.();
      await commit;
      return { outcomes: items.map(() => ({ status: 'stored', created: true, indicatorTs: 7 })), feedTs: 7, decisions: [] };
    },
  };
  /** Resolves once `n` batches have started. */
  const started = async (n: number) => {
    while (batches.length < n) await new Promise<void>((r) => waiters.push(r));
  };
  return { ingest, batches, started };
}

const settle = () => new Promise((r) => setImmediate(r));
const log = pino({ level: 'silent' });

describe('ReportBatcher scheduling', () => {
  it('runs up to maxWorking batches through their statements at once, the next only when one is committing', async () => {
    const { ingest, batches, started } = steppedIngest();
    const events: EventBus = { publish: async () => {}, subscribe: async () => async () => {} };
    const batcher = new ReportBatcher({ ingest, events, log, maxWorking: 2, maxInFlight: 4 });
    const answers = [1, 2, 3, 4].map((n) => batcher.submit(item(n)));
    await started(2);
    await settle();
    // Report 1 alone, then report 2 alone (both slots taken at once), 3 and 4 wait together.
    expect(batches.map((b) => b.networks)).toEqual([['203.0.113.1/32'], ['203.0.113.2/32']]);
    batches[0]!.finishStatements();
    await started(3);
    expect(batches[2]!.networks).toEqual(['203.0.113.3/32', '203.0.113.4/32']);
    for (const b of batches) {
      b.finishStatements();
      b.finishCommit();
    }
    expect(await Promise.all(answers)).toEqual([1, 2, 3, 4].map(() => ({ status: 'stored', created: true, indicatorTs: 7 })));
  });

  it("leaves a batch's slot once its callers are answered: a slow notification does not hold up the next batch", async () => {
    const { ingest, batches, started } = steppedIngest();
    const published: string[] = [];
    // Publishing never finishes (a notification channel stuck behind a slow connection).
    const events: EventBus = { publish: (e) => (published.push(e.type), new Promise(() => {})), subscribe: async () => async () => {} };
    const batcher = new ReportBatcher({ ingest, events, log, maxWorking: 1, maxInFlight: 1 });
    const first = batcher.submit(item(1));
    await started(1);
    batches[0]!.finishStatements();
    batches[0]!.finishCommit();
    expect(await first).toEqual({ status: 'stored', created: true, indicatorTs: 7 });
    await settle();
    expect(published).toEqual(['feed_changed']);
    const second = batcher.submit(item(2));
    await started(2);
    batches[1]!.finishStatements();
    batches[1]!.finishCommit();
    expect(await second).toEqual({ status: 'stored', created: true, indicatorTs: 7 });
  });

  it('runs an all-or-nothing group in a transaction of its own, and fails it whole without retrying its reports one by one', async () => {
    const { ingest, batches, started } = steppedIngest();
    const events: EventBus = { publish: async () => {}, subscribe: async () => async () => {} };
    const batcher = new ReportBatcher({ ingest, events, log, maxWorking: 1, maxInFlight: 1 });
    const first = batcher.submit(item(1));
    await started(1);
    // While report 1 runs: a single report, a group, then two single reports arrive.
    const single = batcher.submit(item(2));
    const group = batcher.submitAll([item(3), item(4)]);
    const after = [batcher.submit(item(5)), batcher.submit(item(6))];
    const failing = batcher.submitAll([item(7), item(8)]);
    const settleBatch = async (n: number, fail?: Error) => {
      await started(n);
      batches[n - 1]!.finishStatements();
      batches[n - 1]!.finishCommit(fail);
    };
    await settleBatch(1);
    await settleBatch(2);
    await settleBatch(3);
    await settleBatch(4);
    await settleBatch(5, new ReservedInBatchError(1, '203.0.113.0/24'));
    expect(batches.map((b) => [b.networks.map((n) => n.split('.')[3]), b.allOrNothing])).toEqual([
      [['1/32'], false],
      [['2/32'], false],
      [['3/32', '4/32'], true],
      [['5/32', '6/32'], false],
      [['7/32', '8/32'], true],
    ]);
    const stored = { status: 'stored', created: true, indicatorTs: 7 };
    expect(await first).toEqual(stored);
    expect(await single).toEqual(stored);
    expect(await group).toEqual([stored, stored]);
    expect(await Promise.all(after)).toEqual([stored, stored]);
    await expect(failing).rejects.toMatchObject({ name: 'ReservedInBatchError', index: 1, range: '203.0.113.0/24' });
    expect(batches).toHaveLength(5);
    expect(await batcher.submitAll([])).toEqual([]);
  });
});
