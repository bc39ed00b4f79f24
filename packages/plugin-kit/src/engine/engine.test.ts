import { describe, expect, it } from 'vitest';
import type { BlockEntry } from '../enforcer.ts';
import type { EnforcerAdapter, TargetChange } from './adapter.ts';
import { createEngineEnforcer, engineStats } from './engine.ts';
import type { KindCodec } from './codec.ts';
import { domainCodec } from '../kinds.ts';
import { compareIpv4 } from '@rampart/contracts';
import { recordingLogger } from '../testing/loggers.ts';

/*
 * The engine over a fake adapter whose target is a Set: every primitive call is recorded, and
 * failures or stalls are injected per call. (The real targets run the conformance suite.)
 */

type Call = { op: 'read' | 'replaceAll' | 'applyBatch' | 'removeAll' | 'probe'; entries?: BlockEntry[]; change?: TargetChange };

function fakeTarget(initial: string[] = []) {
  const target = new Set(initial);
  const calls: Call[] = [];
  const fail: Partial<Record<Call['op'], Error>> = {};
  /** When set, the next call of that op calls this, then waits until its signal aborts. */
  const stall: Partial<Record<Call['op'], () => void>> = {};
  const step = async (op: Call['op'], signal?: AbortSignal) => {
    const error = fail[op];
    if (error) {
      delete fail[op];
      throw error;
    }
    const stalled = stall[op];
    if (stalled) {
      delete stall[op];
      stalled();
      await new Promise((_, reject) => signal!.addEventListener('abort', () => reject(signal!.reason), { once: true }));
    }
  };
  const adapter: EnforcerAdapter = {
    async read(signal) {
      calls.push({ op: 'read' });
      await step('read', signal);
      return [...target];
    },
    async replaceAll(entries, signal) {
      calls.push({ op: 'replaceAll', entries: [...entries] });
      await step('replaceAll', signal);
      target.clear();
      for (const e of entries) target.add(e.value);
    },
    async applyBatch(change, _all, signal) {
      calls.push({ op: 'applyBatch', change });
      await step('applyBatch', signal);
      for (const v of change.remove) target.delete(v);
      for (const e of change.add) target.add(e.value);
    },
    async removeAll(signal) {
      calls.push({ op: 'removeAll' });
      await step('removeAll', signal);
      target.clear();
    },
    async probe(signal) {
      calls.push({ op: 'probe' });
      await step('probe', signal);
    },
  };
  return { target, calls, fail, stall, adapter, ops: () => calls.map((c) => c.op) };
}

/** A logger that keeps its lines (plugin-kit's recordingLogger), and those lines. */
function recorder() {
  const log = recordingLogger();
  return { log, lines: log.lines };
}

const e = (value: string, score: number): BlockEntry => ({ value, score });

describe('enforcer engine', () => {
  it('sync replaces whole; a diff is one batch of only the change, in list order; an empty change writes nothing', async () => {
    const t = fakeTarget();
    const enforcer = createEngineEnforcer(t.adapter, { capacity: Infinity, log: recorder().log });
    expect(await enforcer.sync([e('203.0.113.9', 5), e('198.51.100.0/24', 7), e('bogus', 1)])).toEqual({ enforced: 2, cut: 0, invalid: 1 });
    expect(t.calls[0]).toEqual({ op: 'replaceAll', entries: [e('198.51.100.0/24', 7), e('203.0.113.9/32', 5)] });
    expect(await enforcer.apply({ add: [e('45.77.1.2', 9), e('10.0.0.1', 3)], remove: ['203.0.113.9/32', '192.0.2.1'] })).toEqual({ enforced: 3, cut: 0 });
    expect(t.calls[1]).toEqual({ op: 'applyBatch', change: { add: [e('10.0.0.1/32', 3), e('45.77.1.2/32', 9)], remove: ['203.0.113.9/32'] } });
    await enforcer.apply({ add: [e('45.77.1.2', 9)], remove: ['203.0.113.9'] });
    expect(t.ops()).toEqual(['replaceAll', 'applyBatch']);
    expect(await enforcer.list()).toEqual(['10.0.0.1/32', '45.77.1.2/32', '198.51.100.0/24']);
    expect(engineStats(enforcer)).toEqual({ enforced: 3, cut: 0, replaces: 1, batches: 1, fallbacks: 0, drifts: 0, failures: 0 });
  });

  it('seeds from the target on first use and replaces it whole once', async () => {
    const t = fakeTarget(['185.220.101.1/32', '45.77.0.0/16']);
    const enforcer = createEngineEnforcer(t.adapter, { capacity: Infinity, log: recorder().log });
    expect(await enforcer.apply({ add: [e('185.220.101.2', 50)], remove: ['45.77.0.0/16'] })).toEqual({ enforced: 2, cut: 0 });
    expect(t.ops()).toEqual(['read', 'replaceAll']);
    expect(t.calls[1]!.entries).toEqual([e('185.220.101.1/32', 0), e('185.220.101.2/32', 50)]);
    await enforcer.apply({ add: [e('185.220.101.3', 1)], remove: [] });
    expect(t.ops()).toEqual(['read', 'replaceAll', 'applyBatch']);
  });

  it('cuts the lowest scores at capacity, brings them back when room frees, and logs only when the cut changes', async () => {
    const t = fakeTarget();
    const { log, lines } = recorder();
    const enforcer = createEngineEnforcer(t.adapter, { capacity: 2, log });
    expect(await enforcer.sync([e('45.77.0.1', 10), e('45.77.0.2', 30), e('45.77.0.3', 20)])).toEqual({ enforced: 2, cut: 1 });
    expect([...t.target].sort()).toEqual(['45.77.0.2/32', '45.77.0.3/32']);
    // Equal scores: the lower address stays.
    expect(await enforcer.apply({ add: [e('45.77.0.0', 20)], remove: [] })).toEqual({ enforced: 2, cut: 2 });
    expect([...t.target].sort()).toEqual(['45.77.0.0/32', '45.77.0.2/32']);
    expect(await enforcer.apply({ add: [e('45.77.0.9', 1)], remove: [] })).toEqual({ enforced: 2, cut: 3 });
    expect(t.ops()).toEqual(['replaceAll', 'applyBatch']);
    expect(await enforcer.apply({ add: [], remove: ['45.77.0.2', '45.77.0.0'] })).toEqual({ enforced: 2, cut: 1 });
    expect([...t.target].sort()).toEqual(['45.77.0.1/32', '45.77.0.3/32']);
    const cuts = lines.filter((l) => l.msg === 'capacity reached; lowest scores cut').map((l) => l.data);
    expect(cuts).toEqual([{ cut: 1, capacity: 2 }, { cut: 2, capacity: 2 }, { cut: 3, capacity: 2 }, { cut: 1, capacity: 2 }]);
  });

  it('falls back to a full replace when a batch fails, and says so', async () => {
    const t = fakeTarget();
    const { log, lines } = recorder();
    const enforcer = createEngineEnforcer(t.adapter, { capacity: Infinity, log });
    await enforcer.sync([e('45.77.0.1', 1)]);
    t.target.clear(); // someone flushed it; the batch below fails as a real target's would
    t.fail.applyBatch = new Error('No such file or directory');
    expect(await enforcer.apply({ add: [e('45.77.0.2', 2)], remove: [] })).toEqual({ enforced: 2, cut: 0 });
    expect(t.ops()).toEqual(['replaceAll', 'applyBatch', 'replaceAll']);
    expect([...t.target].sort()).toEqual(['45.77.0.1/32', '45.77.0.2/32']);
    expect(lines.find((l) => l.msg === 'batch failed; replacing the target whole')?.data).toMatchObject({ stage: 'apply', add: 1, remove: 0 });
    expect(engineStats(enforcer)).toMatchObject({ replaces: 2, batches: 0, fallbacks: 1, failures: 1 });
  });

  it('a sync of 20,000 unordered entries and diffs give a list file the whole set in list order', async () => {
    const files: BlockEntry[][] = [];
    const adapter: EnforcerAdapter = {
      read: async () => [],
      replaceAll: async (entries) => void files.push([...entries]),
      applyBatch: async (_change, all) => void files.push(all()),
      removeAll: async () => undefined,
      probe: async () => undefined,
    };
    const enforcer = createEngineEnforcer(adapter, { capacity: Infinity, log: recorder().log });
    const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    const input = Array.from({ length: 20_000 }, (_, i) => e(ip((i * 7919) % 20_000), i % 97));
    input.push(e(ip(5), 1000), e('not an address', 1)); // a duplicate keeps its higher score; one refusal
    expect(await enforcer.sync(input)).toEqual({ enforced: 20_000, cut: 0, invalid: 1 });
    const expected = new Map<string, number>();
    for (const x of input.slice(0, 20_000)) expected.set(`${x.value}/32`, x.score);
    expected.set(`${ip(5)}/32`, 1000);
    const inOrder = () => [...expected].map(([value, score]) => e(value, score)).sort((a, b) => compareIpv4(a.value, b.value));
    expect(files[0]).toEqual(inOrder());
    await enforcer.apply({ add: [e(ip(20_001), 3), e(ip(7), 50)], remove: [`${ip(9)}/32`, ip(11)] });
    expected.set(`${ip(20_001)}/32`, 3).set(`${ip(7)}/32`, 50);
    expected.delete(`${ip(9)}/32`);
    expected.delete(`${ip(11)}/32`);
    expect(files[1]).toEqual(inOrder());
  });

  it('after a failed replace, the next change replaces whole (the target is unknown)', async () => {
    const t = fakeTarget();
    const enforcer = createEngineEnforcer(t.adapter, { capacity: Infinity, log: recorder().log });
    t.fail.replaceAll = new Error('reload failed');
    await expect(enforcer.sync([e('45.77.0.1', 1)])).rejects.toThrow('reload failed');
    await enforcer.apply({ add: [e('45.77.0.2', 2)], remove: [] });
    expect(t.ops()).toEqual(['replaceAll', 'replaceAll']);
    expect([...t.target].sort()).toEqual(['45.77.0.1/32', '45.77.0.2/32']);
  });

  it('reconcile re-asserts a target changed behind its back, and reports no drift otherwise', async () => {
    const t = fakeTarget();
    const enforcer = createEngineEnforcer(t.adapter, { capacity: Infinity, log: recorder().log });
    await enforcer.sync([e('45.77.0.1', 1), e('45.77.0.2', 2)]);
    expect(await enforcer.reconcile!()).toEqual({ enforced: 2, cut: 0, drifted: false });
    t.target.delete('45.77.0.1/32');
    t.target.add('185.220.101.1/32');
    expect(await enforcer.reconcile!()).toEqual({ enforced: 2, cut: 0, drifted: true });
    expect([...t.target].sort()).toEqual(['45.77.0.1/32', '45.77.0.2/32']);
    expect(t.ops()).toEqual(['replaceAll', 'read', 'read', 'replaceAll']);
    expect(engineStats(enforcer)!.drifts).toBe(1);
  });

  it('a value the target holds twice is drift too', async () => {
    const t = fakeTarget();
    const twice: EnforcerAdapter = { ...t.adapter, read: async () => [...t.target, '45.77.0.1/32'] };
    const enforcer = createEngineEnforcer(twice, { capacity: Infinity, log: recorder().log });
    await enforcer.sync([e('45.77.0.1', 1), e('45.77.0.2', 1)]);
    expect(await enforcer.reconcile!()).toMatchObject({ drifted: true });
    expect(await enforcer.list()).toEqual(['45.77.0.1/32', '45.77.0.2/32']);
  });

  it('compares a drift with what the adapter says the target shows for the set', async () => {
    const t = fakeTarget();
    // A target that keeps only networks not inside another (like nft's interval set).
    const adapter: EnforcerAdapter = { ...t.adapter, expected: (entries) => entries.map((e) => e.value).filter((v) => v !== '45.77.1.0/24') };
    const enforcer = createEngineEnforcer(adapter, { capacity: Infinity, log: recorder().log });
    await enforcer.sync([e('45.77.0.0/16', 1), e('45.77.1.0/24', 1)]);
    t.target.delete('45.77.1.0/24');
    expect(await enforcer.reconcile!()).toMatchObject({ drifted: false });
  });

  it('withdraw removes everything and forgets the set; the next change replaces', async () => {
    const t = fakeTarget();
    const enforcer = createEngineEnforcer(t.adapter, { capacity: Infinity, log: recorder().log });
    await enforcer.sync([e('45.77.0.1', 1)]);
    await enforcer.withdraw();
    expect(t.target.size).toBe(0);
    expect(await enforcer.apply({ add: [e('45.77.0.2', 1)], remove: [] })).toEqual({ enforced: 1, cut: 0 });
    expect(t.ops()).toEqual(['replaceAll', 'removeAll', 'replaceAll']);
    expect([...t.target]).toEqual(['45.77.0.2/32']);
  });

  it('an aborted call rejects with the reason, runs nothing, and a call aborted mid-way leaves the target unknown', async () => {
    const t = fakeTarget();
    const enforcer = createEngineEnforcer(t.adapter, { capacity: Infinity, log: recorder().log });
    await enforcer.sync([e('45.77.0.1', 1)]);
    const gone = new AbortController();
    gone.abort(new Error('slot withdrawn'));
    await expect(enforcer.apply({ add: [e('45.77.0.2', 1)], remove: [] }, gone.signal)).rejects.toThrow('slot withdrawn');
    await expect(enforcer.list(gone.signal)).rejects.toThrow('slot withdrawn');
    expect(t.ops()).toEqual(['replaceAll']);

    const stop = new AbortController();
    const started = new Promise<void>((resolve) => (t.stall.applyBatch = resolve));
    const pending = enforcer.apply({ add: [e('45.77.0.3', 1)], remove: [] }, stop.signal);
    // Queued behind the stalled call: runs after it ended.
    const next = enforcer.apply({ add: [e('45.77.0.4', 1)], remove: [] });
    await started;
    stop.abort(new Error('timeout'));
    await expect(pending).rejects.toThrow('timeout');
    await next;
    // No fall-back for an aborted batch; the queued call found the target unknown and replaced.
    expect(t.ops()).toEqual(['replaceAll', 'applyBatch', 'replaceAll']);
    expect([...t.target].sort()).toEqual(['45.77.0.1/32', '45.77.0.3/32', '45.77.0.4/32']);
  });

  it('healthcheck maps the probe: ok, or the reason it failed', async () => {
    const t = fakeTarget();
    const enforcer = createEngineEnforcer(t.adapter, { capacity: Infinity, log: recorder().log });
    expect(await enforcer.healthcheck()).toEqual({ ok: true });
    t.fail.probe = new Error('permission denied');
    expect(await enforcer.healthcheck()).toEqual({ ok: false, detail: 'permission denied' });
  });

  it('refuses values the target cannot hold, counted as invalid', async () => {
    const t = fakeTarget();
    const enforcer = createEngineEnforcer(t.adapter, { capacity: Infinity, log: recorder().log, accepts: (v) => Number(v.split('/')[1]) >= 8 });
    expect(await enforcer.sync([e('0.0.0.0/1', 5), e('45.77.0.0/16', 1)])).toEqual({ enforced: 1, cut: 0, invalid: 1 });
    expect(await enforcer.apply({ add: [], remove: ['0.0.0.0/1'] })).toEqual({ enforced: 1, cut: 0, invalid: 1 });
  });

  it('is generic over the indicator kind', async () => {
    const domain: KindCodec = domainCodec;
    const t = fakeTarget();
    const enforcer = createEngineEnforcer(t.adapter, { capacity: 2, log: recorder().log, codec: domain });
    expect(await enforcer.sync([e('Evil.Example.', 5), e('b.example', 5), e('a.example', 1), e('not a domain', 9)])).toEqual({
      enforced: 2,
      cut: 1,
      invalid: 1,
    });
    expect(await enforcer.list()).toEqual(['b.example', 'evil.example']);
    await enforcer.apply({ add: [], remove: ['EVIL.example'] });
    expect(await enforcer.list()).toEqual(['a.example', 'b.example']);
  });
});
