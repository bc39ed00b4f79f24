import { throwIfAborted } from '../abort.ts';
import type { BlockEntry, Diff, EnforceResult, Enforcer, EnforcerHealth, ReconcileResult } from '../enforcer.ts';
import type { PluginLogger } from '../logger.ts';
import { serializer } from '../serial.ts';
import type { EnforcerAdapter } from './adapter.ts';
import { ipv4Codec, sortByCodec, sortValues, type KindCodec } from './codec.ts';
import { EnforcedSet } from './enforced-set.ts';

export interface EngineOptions {
  /** The target's capacity in entries (Infinity when none applies). */
  capacity: number;
  /** The plugin's logger (a child per instance); the engine's lines carry their data in fields. */
  log: PluginLogger;
  /** The indicator kind (IPv4 CIDRs by default). */
  codec?: KindCodec;
  /** Refuses canonical values this target cannot hold (counted as invalid, never enforced). */
  accepts?(value: string): boolean;
}

/** What the engine did since it was created: the figures behind feedback, metrics and tests. */
export interface EngineStats {
  /** Entries enforced and desired entries cut by the capacity, after the last call. */
  enforced: number;
  cut: number;
  /** Full replaces (sync, fall-backs, drift repairs, first change after a seed or failure). */
  replaces: number;
  /** Incremental batches applied. */
  batches: number;
  /** Batches that failed and were followed by a full replace. */
  fallbacks: number;
  /** Reconciles that found the target changed by someone else. */
  drifts: number;
  /** Calls that failed (the target is replaced whole at the next change). */
  failures: number;
}

const stats = new WeakMap<Enforcer, EngineStats>();

/** The engine's figures for an enforcer built by `createEngineEnforcer`, else undefined. */
export function engineStats(enforcer: Enforcer): Readonly<EngineStats> | undefined {
  return stats.get(enforcer);
}

/** Equal as multisets: a value the target holds twice is drift too. */
function sameValues(codec: KindCodec, live: readonly string[], expected: readonly string[]): boolean {
  if (live.length !== expected.length) return false;
  const a = sortValues(codec, live);
  const b = sortValues(codec, expected);
  return a.every((value, i) => value === b[i]);
}

/**
 * The one enforcer engine: turns an adapter's primitives into the `Enforcer` contract.
 *
 * - The desired set (with scores) is the truth; what fits in the capacity is enforced, highest
 *   scores first, and the cut is counted in every result and logged when it changes.
 * - A process restarted without a sync owns what the target holds: the first `apply` or
 *   `reconcile` reads it (scores unknown, 0) and replaces it whole.
 * - `apply` sends only the change, as a batch, while the target is known to hold the last
 *   commit; otherwise (never committed, a call failed or was aborted, withdrawn) and when a
 *   batch fails, it replaces the target whole.
 * - `reconcile` reads the target and re-asserts the set with a full replace when it differs.
 * - Mutating calls run one at a time in call order; an aborted signal rejects the call before it
 *   starts or as soon as it aborts, and leaves the target unknown (replaced at the next call).
 */
export function createEngineEnforcer(adapter: EnforcerAdapter, options: EngineOptions): Enforcer {
  const codec = options.codec ?? ipv4Codec;
  const { capacity, log } = options;
  const set = new EnforcedSet(capacity, codec, options.accepts);
  const figures: EngineStats = { enforced: 0, cut: 0, replaces: 0, batches: 0, fallbacks: 0, drifts: 0, failures: 0 };
  const serial = serializer();
  /** True while the target holds what the last successful write placed. */
  let committed = false;
  let seeded = false;
  let loggedCut = 0;

  const enforcedEntries = (): BlockEntry[] => sortByCodec(codec, set.entries(), (e) => e.value);

  function result(): EnforceResult {
    figures.enforced = set.size;
    figures.cut = set.cut;
    // Logged when the cut changes, not on every diff while the set stays full.
    if (set.cut !== loggedCut && set.cut > 0) log.warn({ cut: set.cut, capacity }, 'capacity reached; lowest scores cut');
    loggedCut = set.cut;
    const invalid = set.desired.invalid;
    if (invalid > 0) log.warn({ invalid }, 'inputs refused: not of this kind or not held by this target');
    return { enforced: set.size, cut: set.cut, ...(invalid > 0 ? { invalid } : {}) };
  }

  /** Runs a write; on any failure the target is unknown until the next full replace. */
  async function write(step: () => Promise<void>): Promise<void> {
    committed = false;
    try {
      await step();
    } catch (err) {
      figures.failures += 1;
      throw err;
    }
    committed = true;
  }

  async function replaceAll(reason: string, signal?: AbortSignal): Promise<void> {
    const entries = enforcedEntries();
    await write(() => adapter.replaceAll(entries, signal));
    figures.replaces += 1;
    log.info({ reason, entries: entries.length }, 'target replaced');
  }

  async function seed(signal?: AbortSignal): Promise<void> {
    if (seeded) return;
    const live = await adapter.read(signal);
    set.replace(live.map((value) => ({ value, score: 0 })));
    set.desired.invalid = 0;
    seeded = true;
  }

  async function applyChange(change: { added: string[]; removed: string[] }, signal?: AbortSignal): Promise<void> {
    const empty = change.added.length === 0 && change.removed.length === 0;
    if (committed && empty) return;
    if (!committed || !adapter.applyBatch) return replaceAll(committed ? 'change' : 'target unknown', signal);
    const batch = {
      add: sortValues(codec, change.added).map((value) => ({ value, score: set.desired.score(value)! })),
      remove: sortValues(codec, change.removed),
    };
    try {
      await write(() => adapter.applyBatch!(batch, enforcedEntries, signal));
      figures.batches += 1;
    } catch (err) {
      // Cancelled: the target holds part of the batch; it stays unknown and is replaced next time.
      if (signal?.aborted) throw err;
      figures.fallbacks += 1;
      log.warn({ err, stage: 'apply', add: batch.add.length, remove: batch.remove.length }, 'batch failed; replacing the target whole');
      await replaceAll('batch failed', signal);
    }
  }

  const enforcer: Enforcer = {
    capacity,

    async healthcheck(signal?: AbortSignal): Promise<EnforcerHealth> {
      try {
        await adapter.probe(signal);
        return { ok: true };
      } catch (err) {
        if (signal?.aborted) throw err;
        return { ok: false, detail: (err instanceof Error ? err.message : String(err)).slice(0, 500) };
      }
    },

    sync: (entries: BlockEntry[], signal?: AbortSignal) =>
      serial(async () => {
        set.replace(entries);
        seeded = true;
        await replaceAll('sync', signal);
        return result();
      }, signal),

    apply: (diff: Diff, signal?: AbortSignal) =>
      serial(async () => {
        await seed(signal);
        const change = set.apply(diff);
        await applyChange(change, signal);
        return result();
      }, signal),

    async list(signal?: AbortSignal): Promise<string[]> {
      throwIfAborted(signal);
      return sortValues(codec, new Set(await adapter.read(signal)));
    },

    reconcile: (signal?: AbortSignal): Promise<ReconcileResult> =>
      serial(async () => {
        await seed(signal);
        const live = await adapter.read(signal);
        const enforced = enforcedEntries();
        const expected = adapter.expected ? adapter.expected(enforced) : enforced.map((e) => e.value);
        const drifted = !committed || !sameValues(codec, live, expected);
        if (drifted) {
          figures.drifts += 1;
          log.warn({ live: live.length, expected: enforced.length }, 'target drifted; re-asserting');
          await replaceAll('drift', signal);
        }
        set.desired.invalid = 0;
        return { ...result(), drifted };
      }, signal),

    withdraw: (signal?: AbortSignal) =>
      serial(async () => {
        set.clear();
        seeded = true;
        committed = false;
        try {
          await adapter.removeAll(signal);
        } catch (err) {
          figures.failures += 1;
          throw err;
        }
        result();
        log.info({}, 'target withdrawn');
      }, signal),

    async close(signal?: AbortSignal): Promise<void> {
      await adapter.close?.(signal);
    },
  };
  stats.set(enforcer, figures);
  return enforcer;
}
