import { throwIfAborted } from '../abort.ts';
import type { BlockEntry, Diff, EnforceResult, Enforcer, EnforcerHealth, ReconcileResult } from '../enforcer.ts';
import type { PluginLogger } from '../logger.ts';
import { serializer } from '../serial.ts';
import type { EnforcerAdapter } from './adapter.ts';
import { ipv4Codec, sortByCodec, sortValues, type KindCodec } from './codec.ts';
import { EnforcedSet, type EnforcedChange } from './enforced-set.ts';
import { orderInput } from './list-order.ts';

export interface EngineOptions {
  /** The target's capacity in entries (Infinity when none applies). */
  capacity: number;
  /** The plugin's logger (a child per instance); the engine's lines carry their data in fields. */
  log: PluginLogger;
  /** The indicator kind (IPv4 CIDRs by default). */
  codec?: KindCodec;
  /** Refuses canonical values this target cannot hold (counted as invalid, never enforced). */
  accepts?: (value: string) => boolean;
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

/** Equal as multisets (a value the target holds twice is drift too); O(n), no sort. */
function sameValues(live: readonly string[], expected: readonly string[]): boolean {
  if (live.length !== expected.length) return false;
  const counts = new Map<string, number>();
  for (const value of live) counts.set(value, (counts.get(value) ?? 0) + 1);
  for (const value of expected) {
    const left = counts.get(value);
    if (!left) return false;
    counts.set(value, left - 1);
  }
  return true;
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
  const engine = new EnforcerEngine(adapter, options);
  stats.set(engine, engine.figures);
  return engine;
}

class EnforcerEngine implements Enforcer {
  readonly capacity: number;
  readonly figures: EngineStats = { enforced: 0, cut: 0, replaces: 0, batches: 0, fallbacks: 0, drifts: 0, failures: 0 };
  readonly #adapter: EnforcerAdapter;
  readonly #log: PluginLogger;
  readonly #codec: KindCodec;
  readonly #set: EnforcedSet;
  readonly #serial = serializer();
  /** True while the target holds what the last successful write placed. */
  #committed = false;
  #seeded = false;
  #loggedCut = 0;

  constructor(adapter: EnforcerAdapter, options: EngineOptions) {
    this.#adapter = adapter;
    this.#log = options.log;
    this.#codec = options.codec ?? ipv4Codec;
    this.capacity = options.capacity;
    // A target written in list order keeps its set in that order: a sync adopts its ordered
    // input, a batch is one merge, and every write gets the entries without a sort.
    this.#set = new EnforcedSet(options.capacity, this.#codec, options.accepts, !adapter.unordered);
  }

  async healthcheck(signal?: AbortSignal): Promise<EnforcerHealth> {
    try {
      await this.#adapter.probe(signal);
      return { ok: true };
    } catch (err) {
      if (signal?.aborted) throw err;
      return { ok: false, detail: (err instanceof Error ? err.message : String(err)).slice(0, 500) };
    }
  }

  sync(entries: BlockEntry[], signal?: AbortSignal): Promise<EnforceResult> {
    return this.#serial(async () => {
      this.#seeded = true;
      const ordered = this.#set.desired.ordered ? orderInput(entries, this.#set.desired.canonicalKey) : null;
      if (ordered && this.#set.replaceChecked(ordered.entries, ordered.keys, ordered.invalid)) {
        await this.#replaceAll('sync', signal);
        return this.#result();
      }
      this.#set.replace(entries);
      await this.#replaceAll('sync', signal);
      return this.#result();
    }, signal);
  }

  apply(diff: Diff, signal?: AbortSignal): Promise<EnforceResult> {
    return this.#serial(async () => {
      await this.#seed(signal);
      const change = this.#set.apply(diff);
      await this.#applyChange(change, signal);
      return this.#result();
    }, signal);
  }

  async list(signal?: AbortSignal): Promise<string[]> {
    throwIfAborted(signal);
    return sortValues(this.#codec, new Set(await this.#adapter.read(signal)));
  }

  reconcile(signal?: AbortSignal): Promise<ReconcileResult> {
    return this.#serial(async () => {
      await this.#seed(signal);
      const live = await this.#adapter.read(signal);
      const enforced = this.#set.entries();
      const expected = this.#adapter.expected ? this.#adapter.expected(enforced) : enforced.map((e) => e.value);
      const drifted = !this.#committed || !sameValues(live, expected);
      if (drifted) {
        this.figures.drifts += 1;
        this.#log.warn({ live: live.length, expected: expected.length }, 'target drifted; re-asserting');
        await this.#replaceAll('drift', signal);
      }
      this.#set.desired.invalid = 0;
      return { ...this.#result(), drifted };
    }, signal);
  }

  withdraw(signal?: AbortSignal): Promise<void> {
    return this.#serial(async () => {
      this.#set.clear();
      this.#seeded = true;
      this.#committed = false;
      try {
        await this.#adapter.removeAll(signal);
      } catch (err) {
        this.figures.failures += 1;
        throw err;
      }
      this.#result();
      this.#log.info({}, 'target withdrawn');
    }, signal);
  }

  async close(signal?: AbortSignal): Promise<void> {
    await this.#adapter.close?.(signal);
  }

  /** What the target gets: list order unless the target does not care (or the set is already in it). */
  #enforcedEntries(): BlockEntry[] {
    const entries = this.#set.entries();
    return this.#adapter.unordered || this.#set.desired.ordered ? entries : sortByCodec(this.#codec, entries, (e) => e.value);
  }

  #result(): EnforceResult {
    const set = this.#set;
    this.figures.enforced = set.size;
    this.figures.cut = set.cut;
    // Logged when the cut changes, not on every diff while the set stays full.
    if (set.cut !== this.#loggedCut && set.cut > 0) this.#log.warn({ cut: set.cut, capacity: this.capacity }, 'capacity reached; lowest scores cut');
    this.#loggedCut = set.cut;
    const invalid = set.desired.invalid;
    if (invalid > 0) this.#log.warn({ invalid }, 'inputs refused: not of this kind or not held by this target');
    return { enforced: set.size, cut: set.cut, ...(invalid > 0 ? { invalid } : {}) };
  }

  /** Runs a write; on any failure the target is unknown until the next full replace. */
  async #write(step: () => Promise<void>): Promise<void> {
    this.#committed = false;
    try {
      await step();
    } catch (err) {
      this.figures.failures += 1;
      throw err;
    }
    this.#committed = true;
  }

  async #replaceAll(reason: string, signal?: AbortSignal, entries = this.#enforcedEntries()): Promise<void> {
    await this.#write(() => this.#adapter.replaceAll(entries, signal));
    this.figures.replaces += 1;
    this.#log.info({ reason, entries: entries.length }, 'target replaced');
  }

  async #seed(signal?: AbortSignal): Promise<void> {
    if (this.#seeded) return;
    const live = await this.#adapter.read(signal);
    this.#set.replace(live.map((value) => ({ value, score: 0 })));
    this.#set.desired.invalid = 0;
    this.#seeded = true;
  }

  async #applyChange(change: EnforcedChange, signal?: AbortSignal): Promise<void> {
    const empty = change.added.length === 0 && change.removed.length === 0;
    if (this.#committed && empty) return;
    const adapter = this.#adapter;
    if (!this.#committed || !adapter.applyBatch) return this.#replaceAll(this.#committed ? 'change' : 'target unknown', signal);
    const desired = this.#set.desired;
    const batch = {
      add: sortValues(this.#codec, change.added).map((value) => ({ value, score: desired.score(value)! })),
      remove: sortValues(this.#codec, change.removed),
    };
    try {
      await this.#write(() => adapter.applyBatch!(batch, () => this.#enforcedEntries(), signal));
      this.figures.batches += 1;
    } catch (err) {
      // Cancelled: the target holds part of the batch; it stays unknown and is replaced next time.
      if (signal?.aborted) throw err;
      this.figures.fallbacks += 1;
      this.#log.warn({ err, stage: 'apply', add: batch.add.length, remove: batch.remove.length }, 'batch failed; replacing the target whole');
      await this.#replaceAll('batch failed', signal);
    }
  }
}
