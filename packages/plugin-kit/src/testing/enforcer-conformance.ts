import { describe, expect, it, type TestContext } from 'vitest';
import type { BlockEntry, Diff, Enforcer } from '../enforcer.ts';
import { canonicalCidr, keepTop, sortCidrs } from '../block-list.ts';
import { engineStats } from '../engine/engine.ts';

/*
 * The conformance suite every enforcer passes against its real target (conventions §3, §12):
 * what `list()` reads back from the target must equal, exactly and in `sortCidrs` order, what
 * the contract says the calls before it should have left there.
 */

export interface ConformanceSubject {
  enforcer: Enforcer;
  /**
   * Empties the target behind the enforcer's back, the way an operator or a firewall reload
   * does (`nft flush ruleset`, a list file deleted). Omit when the target cannot be disturbed.
   */
  disturb?(): Promise<void>;
  /**
   * Opens another instance with the same configuration on the same target, the way the agent
   * does after a restart. Omit when the target cannot be shared.
   */
  reopen?(): Promise<Enforcer>;
  /** Removes what the factory created (namespace, temp directory, stand-in server). */
  teardown?(): Promise<void>;
}

export interface ConformanceOptions {
  /** When set, the enforcer must be created with this capacity (`enforcer.capacity === capacity`). */
  capacity?: number;
}

/** Creates a fresh enforcer on a fresh (or emptied) target for each test. */
export type EnforcerFactory = (options: ConformanceOptions) => Promise<ConformanceSubject>;

export interface ConformanceSettings {
  /** Entries in the bulk sync test (default 1,000), to cross the plugin's batch sizes. */
  bulkSize?: number;
  /** Test timeout in ms for targets that are slow to start (default vitest's). */
  timeoutMs?: number;
  /**
   * For targets that hold only some CIDRs (an ASA shun holds one host, never a network): what
   * they hold. The rest must be refused, counted as `invalid` and never enforced.
   */
  holds?: (cidr: string) => boolean;
}

/** Deterministic single addresses in 198.18.0.0/15 (RFC 2544 benchmarking range). */
export function conformanceAddresses(count: number, offset = 0): BlockEntry[] {
  return Array.from({ length: count }, (_, i) => {
    const n = i + offset;
    return { value: `198.${18 + ((n >> 16) & 1)}.${(n >> 8) & 255}.${n & 255}/32`, score: 100 + (n % 900) };
  });
}

const NETWORKS: BlockEntry[] = [
  { value: '10.0.0.0/8', score: 500 },
  { value: '172.16.4.0/22', score: 400 },
  { value: '192.0.2.0/25', score: 300 },
  { value: '192.0.2.128/25', score: 300 },
  { value: '203.0.113.8/31', score: 200 },
  { value: '203.0.113.77/32', score: 100 },
];

/**
 * Spellings near the IPv4 grammar that every enforcer must refuse (@rampart/contracts' module):
 * leading zeros in an octet or a prefix, blanks, a trailing CR (a list file written on Windows).
 */
export const EDGE_SPELLINGS: readonly string[] = [
  '010.0.0.2',
  '10.0.0.03/32',
  '203.0.113.10/08',
  ' 203.0.113.11',
  '203.0.113.12 ',
  '203.0.113.13 /32',
  '203.0.113.14\r',
  '203.0.113.15/32\r',
  '203.0.113.256',
];


type Body = (subject: ConformanceSubject, ctx: TestContext) => Promise<void>;

interface TestOptions extends ConformanceOptions {
  /** The body closes the enforcer itself; cleanup only tears the target down. */
  closes?: boolean;
}

async function withSubject(factory: EnforcerFactory, options: TestOptions, ctx: TestContext, body: Body) {
  const { closes, ...factoryOptions } = options;
  const subject = await factory(factoryOptions);
  try {
    await body(subject, ctx);
  } finally {
    try {
      if (!closes) {
        await subject.enforcer.withdraw();
        await subject.enforcer.close();
      }
    } finally {
      await subject.teardown?.();
    }
  }
}

export function enforcerConformance(name: string, factory: EnforcerFactory, settings: ConformanceSettings = {}): void {
  const bulkSize = settings.bulkSize ?? 1000;
  const holds = settings.holds ?? (() => true);
  /** The desired entries the target can hold. */
  const held = (entries: BlockEntry[]) => entries.filter((e) => holds(canonicalCidr(e.value)!));
  /** What `list()` must return after the desired set `entries` at `capacity`. */
  const expected = (entries: BlockEntry[], capacity = Infinity): string[] => sortCidrs(keepTop(held(entries), capacity).kept.map((e) => e.value));
  const cidrsOf = (entries: BlockEntry[]): string[] => sortCidrs(held(entries).map((e) => canonicalCidr(e.value)!));
  const test = (title: string, options: TestOptions, body: Body) =>
    it(title, (ctx) => withSubject(factory, options, ctx, body), settings.timeoutMs);

  describe(`enforcer conformance: ${name}`, () => {
    test('runs on the shared enforcer engine: a sync replaces, a diff is one more write', {}, async ({ enforcer }, ctx) => {
      if (!engineStats(enforcer)) return ctx.skip('not built on the plugin-kit engine (createEngineEnforcer)');
      await enforcer.sync(conformanceAddresses(5));
      await enforcer.apply({ add: conformanceAddresses(2, 50), remove: [] });
      await enforcer.apply({ add: conformanceAddresses(2, 50), remove: [] });
      const stats = engineStats(enforcer)!;
      expect(stats).toMatchObject({ enforced: 7, cut: 0, fallbacks: 0, failures: 0, drifts: 0 });
      // A batch where the adapter has one, else a full replace; the repeated diff writes nothing.
      expect(stats.replaces + stats.batches).toBe(2);
      expect(stats.replaces).toBeGreaterThanOrEqual(1);
    });

    test('is healthy and starts empty after an empty sync', {}, async ({ enforcer }) => {
      expect(await enforcer.healthcheck()).toMatchObject({ ok: true });
      expect(await enforcer.sync([])).toMatchObject({ enforced: 0, cut: 0 });
      expect(await enforcer.list()).toEqual([]);
    });

    test('sync then read back returns exactly the desired set', {}, async ({ enforcer }) => {
      const desired = [...conformanceAddresses(bulkSize), ...NETWORKS];
      const want = expected(desired, enforcer.capacity);
      const result = await enforcer.sync(desired);
      expect(result).toMatchObject({ enforced: want.length, cut: held(desired).length - want.length });
      expect(await enforcer.list()).toEqual(want);
    });

    test('a call whose signal is aborted rejects and leaves the target as it was; the next sync works', {}, async ({ enforcer }) => {
      const start = conformanceAddresses(10);
      await enforcer.sync(start);
      const controller = new AbortController();
      controller.abort(new Error('conformance: aborted'));
      const { signal } = controller;
      await expect(enforcer.sync(conformanceAddresses(5, 300), signal)).rejects.toThrow();
      await expect(enforcer.apply({ add: conformanceAddresses(2, 400), remove: [start[0]!.value] }, signal)).rejects.toThrow();
      await expect(enforcer.withdraw(signal)).rejects.toThrow();
      await expect(enforcer.list(signal)).rejects.toThrow();
      expect(await enforcer.list()).toEqual(expected(start, enforcer.capacity));
      const second = conformanceAddresses(4, 600);
      await enforcer.sync(second);
      expect(await enforcer.list()).toEqual(expected(second, enforcer.capacity));
    });

    test('a second sync replaces everything the first placed', {}, async ({ enforcer }) => {
      await enforcer.sync([...conformanceAddresses(20), ...NETWORKS]);
      const second = conformanceAddresses(10, 5000);
      await enforcer.sync(second);
      expect(await enforcer.list()).toEqual(expected(second, enforcer.capacity));
    });

    test('apply adds and deletes entries', {}, async ({ enforcer }) => {
      const start = conformanceAddresses(10);
      await enforcer.sync(start);
      const diff: Diff = {
        add: [...conformanceAddresses(3, 100), { value: '192.0.2.0/24', score: 700 }],
        remove: [start[0]!.value, start[5]!.value],
      };
      const after = [...start.filter((_, i) => i !== 0 && i !== 5), ...diff.add];
      const want = expected(after, enforcer.capacity);
      expect(await enforcer.apply(diff)).toMatchObject({ enforced: want.length, cut: held(after).length - want.length });
      expect(await enforcer.list()).toEqual(want);
      await enforcer.apply({ add: [], remove: ['192.0.2.0/24'] });
      expect(await enforcer.list()).toEqual(want.filter((c) => c !== '192.0.2.0/24'));
    });

    test('a bulk diff (across batch sizes) is applied whole', {}, async ({ enforcer }) => {
      const start = conformanceAddresses(10);
      await enforcer.sync(start);
      const add = conformanceAddresses(bulkSize, 20_000);
      await enforcer.apply({ add, remove: [start[0]!.value] });
      expect(await enforcer.list()).toEqual(expected([...start.slice(1), ...add], enforcer.capacity));
      await enforcer.apply({ add: [], remove: add.map((e) => e.value) });
      expect(await enforcer.list()).toEqual(expected(start.slice(1), enforcer.capacity));
    });

    test('duplicates and non-canonical spellings collapse to one entry', {}, async ({ enforcer }) => {
      const result = await enforcer.sync([
        { value: '203.0.113.7', score: 10 },
        { value: '203.0.113.7/32', score: 20 },
        { value: '198.51.100.9/24', score: 30 },
        { value: '198.51.100.0/24', score: 40 },
      ]);
      const both = ['198.51.100.0/24', '203.0.113.7/32'].filter(holds);
      expect(result).toMatchObject({ enforced: both.length, cut: 0 });
      expect(await enforcer.list()).toEqual(both);
      // Adding what is there and removing what is not are both no-ops, not errors.
      await enforcer.apply({ add: [{ value: '203.0.113.7/32', score: 50 }], remove: ['192.0.2.200/32'] });
      expect(await enforcer.list()).toEqual(both);
    });

    test('spellings outside the IPv4 grammar are refused the same way, never enforced', {}, async ({ enforcer }) => {
      const valid = [{ value: '10.0.0.1/32', score: 100 }, { value: '198.51.100.0/24', score: 90 }];
      const result = await enforcer.sync([...valid, ...EDGE_SPELLINGS.map((cidr) => ({ value: cidr, score: 500 }))]);
      const want = expected(valid, enforcer.capacity);
      expect(result).toMatchObject({ enforced: want.length });
      if (result.invalid !== undefined) expect(result.invalid).toBe(EDGE_SPELLINGS.length + valid.length - held(valid).length);
      expect(await enforcer.list()).toEqual(want);
      // Nor does an edge spelling of an enforced entry remove it.
      await enforcer.apply({ add: EDGE_SPELLINGS.map((cidr) => ({ value: cidr, score: 500 })), remove: ['010.0.0.1', '10.0.0.1\r', ' 10.0.0.1', '198.51.100.0/024'] });
      expect(await enforcer.list()).toEqual(want);
    });

    test('applying the same diff twice changes nothing the second time', {}, async ({ enforcer }) => {
      const start = conformanceAddresses(8);
      await enforcer.sync(start);
      const diff: Diff = { add: conformanceAddresses(4, 300), remove: [start[1]!.value, start[2]!.value] };
      const first = await enforcer.apply(diff);
      const listed = await enforcer.list();
      const second = await enforcer.apply(diff);
      expect(second).toMatchObject({ enforced: first.enforced, cut: first.cut });
      expect(await enforcer.list()).toEqual(listed);
      expect(listed).toEqual(expected([...start.slice(0, 1), ...start.slice(3), ...diff.add], enforcer.capacity));
    });

    test('networks of every prefix length are enforced and read back as CIDRs', {}, async ({ enforcer }) => {
      await enforcer.sync(NETWORKS);
      expect(await enforcer.list()).toEqual(expected(NETWORKS, enforcer.capacity));
      await enforcer.apply({ add: [{ value: '100.64.0.0/10', score: 1 }], remove: ['192.0.2.0/25'] });
      expect(await enforcer.list()).toEqual(
        expected([...NETWORKS.filter((n) => n.value !== '192.0.2.0/25'), { value: '100.64.0.0/10', score: 1 }], enforcer.capacity),
      );
    });

    test('a capacity cut keeps the highest scores and counts the rest', { capacity: 4 }, async ({ enforcer }) => {
      expect(enforcer.capacity).toBe(4);
      const scores = [50, 700, 10, 300, 900, 20, 600];
      const desired = scores.map((score, i) => ({ value: `192.0.2.${i + 1}/32`, score }));
      expect(await enforcer.sync(desired)).toMatchObject({ enforced: 4, cut: 3 });
      expect(await enforcer.list()).toEqual(cidrsOf(desired.filter((e) => e.score >= 300)));

      const full = desired.filter((e) => e.score >= 300);
      await enforcer.sync(full);
      const diff: Diff = { add: [{ value: '192.0.2.100/32', score: 1000 }, { value: '192.0.2.101/32', score: 5 }], remove: [] };
      expect(await enforcer.apply(diff)).toMatchObject({ enforced: 4, cut: 2 });
      expect(await enforcer.list()).toEqual(['192.0.2.2/32', '192.0.2.5/32', '192.0.2.7/32', '192.0.2.100/32']);
    });

    test('withdraw removes everything, and a later sync enforces again', {}, async ({ enforcer }) => {
      const desired = conformanceAddresses(5);
      await enforcer.sync(desired);
      await enforcer.withdraw();
      expect(await enforcer.list()).toEqual([]);
      await enforcer.withdraw();
      await enforcer.sync(desired);
      expect(await enforcer.list()).toEqual(cidrsOf(desired));
    });

    test('a target emptied behind its back is re-asserted whole, including diffs made meanwhile', {}, async (subject, ctx) => {
      if (!subject.disturb) return ctx.skip('the factory cannot disturb this target');
      const { enforcer } = subject;
      const desired = [...conformanceAddresses(6), ...NETWORKS.slice(0, 2)];
      const extra = { value: '198.51.100.50/32', score: 999 };
      const whole = expected([...desired, extra], enforcer.capacity);
      await enforcer.sync(desired);
      await subject.disturb();
      // list() reads the target, not a cache.
      expect(await enforcer.list()).toEqual([]);
      // A diff while disturbed must not make the enforcer forget the rest of its set.
      await enforcer.apply({ add: [extra], remove: [] });
      if (enforcer.reconcile) await enforcer.reconcile();
      else await enforcer.sync([...desired, extra]);
      expect(await enforcer.list()).toEqual(whole);
      if (enforcer.reconcile) {
        await subject.disturb();
        expect(await enforcer.reconcile()).toMatchObject({ drifted: true, enforced: whole.length });
        expect(await enforcer.list()).toEqual(whole);
        expect(await enforcer.reconcile()).toMatchObject({ drifted: false, enforced: whole.length });
      }
    });

    test('a new instance on the same target owns what it holds (an agent restart), then applies diffs', {}, async (subject, ctx) => {
      if (!subject.reopen) return ctx.skip('the factory cannot open a second instance on the same target');
      const start = conformanceAddresses(6);
      await subject.enforcer.sync(start);
      const again = await subject.reopen();
      try {
        const extra = { value: '198.51.100.60/32', score: 999 };
        await again.apply({ add: [extra], remove: [start[0]!.value] });
        expect(await again.list()).toEqual(expected([...start.slice(1), extra], again.capacity));
        await again.apply({ add: [], remove: [start[1]!.value] });
        expect(await again.list()).toEqual(expected([...start.slice(2), extra], again.capacity));
      } finally {
        await again.close();
      }
    });

    test('close can be called twice', { closes: true }, async ({ enforcer }) => {
      await enforcer.sync(conformanceAddresses(2));
      await enforcer.withdraw();
      await enforcer.close();
      await expect(enforcer.close()).resolves.toBeUndefined();
    });
  });
}
