import type { BlockEntry, Diff, KindCodec } from '@rampart/plugin-kit';
import { FED, LISTED, UPDATED } from './record-table.ts';
import { entryNextChange, entryRank, type BlockPolicy } from './block-state.ts';
import type { KindNeverBlock } from './named-never-block.ts';

/*
 * The agent's view of what to block for one named kind (domain, URL, file digest). The same
 * rules as IPv4 (block-state.ts: entryRank, entryNextChange, the LISTED/UPDATED/FED flags of the
 * last full reconcile) over string values in the kind's canonical form. These feeds are small
 * next to IPv4's, so a Map of small objects holds them.
 */

export interface NamedEntry {
  /**
   * The indicator's canonical values: one for a domain or URL; for a file, every digest its
   * record carries (MD5, SHA1, SHA256), each enforced as an entry of its own.
   */
  values: string[];
  /** Score at time zero; 0 when only the server list or a decision named it. */
  s0: number;
  /** Time zero of the decay clock, epoch seconds. */
  ts: number;
  decision: -1 | 0 | 1;
  /** Epoch seconds, 0 = none (named-kind decisions have no ttl today). */
  ttl: number;
  flags: number;
}

/** A block set of one named kind: canonical values sorted by the codec, with their ranks. */
export interface NamedSet {
  values: string[];
  ranks: number[];
  index: Set<string>;
}

export interface NamedEvaluation extends NamedSet {
  /** Entries left out because `maximum_rules` was reached (lowest ranks first). */
  cut: number;
  /** Indicators left out by the never-block list. */
  protectedCount: number;
}

export const EMPTY_NAMED_SET: NamedSet = { values: [], ranks: [], index: new Set() };

export interface NamedRecordInput {
  /** Raw values of the record (canonicalised here; values that are not of the kind are dropped). */
  values: string[];
  score: number;
  ts: number;
  decision: -1 | 0 | 1;
}

export class NamedBlockState {
  /** Each entry once, under every one of its values. */
  private readonly byValue = new Map<string, NamedEntry>();
  /** The feed second of the newest pushed decision applied, by value, until the feed catches up with it. */
  private readonly pushed = new Map<string, number>();
  private readonly all = new Set<NamedEntry>();
  enforced: NamedSet = EMPTY_NAMED_SET;
  /** Epoch seconds of the last full reconcile. */
  listedAt = 0;

  constructor(
    readonly codec: KindCodec,
    public neverBlock: KindNeverBlock,
  ) {}

  get size(): number {
    return this.all.size;
  }

  entries(): IterableIterator<NamedEntry> {
    return this.all.values();
  }

  get(value: string): NamedEntry | undefined {
    const canonical = this.codec.canonical(value);
    return canonical === undefined ? undefined : this.byValue.get(canonical);
  }

  /** Puts an entry back as saved (feed state); values are canonical already. */
  restore(entry: NamedEntry): void {
    this.upsert(entry.values, entry);
  }

  /**
   * A feed record. A file record found under any of its digests updates that entry (a later
   * report may add the SHA256 to a record known by its MD5): entries that share a digest merge.
   */
  ingestRecord(record: NamedRecordInput): boolean {
    const values = this.canonicalAll(record.values);
    if (values.length === 0) return false;
    const previous = this.find(values);
    for (const value of values) {
      const pushed = this.pushed.get(value);
      if (pushed !== undefined && record.ts >= pushed) this.pushed.delete(value);
    }
    this.upsert(values, {
      values,
      s0: Math.max(0, Math.min(1000, Math.round(record.score))),
      ts: record.ts,
      decision: record.decision,
      ttl: 0,
      // FED: a score of 0 is the server's (a decision record on a value nobody reported), not an entry known only from the list.
      flags: ((previous?.flags ?? 0) & LISTED) | UPDATED | FED,
    });
    return true;
  }

  /**
   * A decision pushed over the sync channel for one value (for files, any of the digests).
   * `version` (the change's feed second, when the server sends it) orders it against the feed as
   * on IPv4 (BlockState.applyDecision): a push older than a record the feed delivered, or than a
   * push already applied, arrived late and is dropped; a versioned clear waits for the feed,
   * which re-delivers the record with what follows it (its score).
   */
  applyDecision(value: string, decision: -1 | 0 | 1, ttl: number | null, now: number, version?: number): boolean {
    const values = this.canonicalAll([value]);
    if (values.length === 0) return false;
    const previous = this.find(values);
    if (version !== undefined) {
      if (previous && previous.flags & FED && previous.ts >= version) return false;
      if (version < (this.pushed.get(values[0]!) ?? -1)) return false;
      this.pushed.set(values[0]!, version);
      if (decision === -1) return false;
    }
    // A whitelist is kept even on a value nobody reported: an enforcer that blocks a parent name
    // (RPZ's `*.name`) exempts it (see `allowed`).
    if (!previous && decision === -1) return true;
    this.upsert(values, {
      values,
      s0: previous?.s0 ?? 0,
      ts: previous?.ts ?? now,
      decision,
      ttl: ttl ?? 0,
      flags: ((previous?.flags ?? 0) & (LISTED | FED)) | UPDATED,
    });
    return true;
  }

  /** Marks exactly the values of the server's score list as LISTED; values known only from it are added. */
  applyServerList(values: readonly string[], now: number): number {
    for (const entry of this.all) entry.flags &= ~(LISTED | UPDATED);
    let count = 0;
    for (const raw of values) {
      const value = this.codec.canonical(raw);
      if (value === undefined) continue;
      count += 1;
      const entry = this.byValue.get(value);
      if (entry) entry.flags |= LISTED;
      else this.upsert([value], { values: [value], s0: 0, ts: now, decision: -1, ttl: 0, flags: LISTED });
    }
    this.listedAt = now;
    this.prune(now);
    return count;
  }

  /** Drops entries that can never block again: list-only entries no longer listed, without a live decision (a whitelist is one). */
  prune(now: number): void {
    // Deleting the current member while iterating a Set is safe.
    for (const entry of this.all) {
      const liveDecision = entry.decision === 0 || (entry.decision === 1 && (entry.ttl === 0 || entry.ttl > now));
      if (entry.s0 === 0 && !(entry.flags & LISTED) && !liveDecision) this.remove(entry);
    }
  }

  evaluate(now: number, policy: BlockPolicy): NamedEvaluation {
    const chosen: { value: string; rank: number }[] = [];
    let protectedCount = 0;
    for (const e of this.all) {
      const rank = entryRank(e.s0, e.ts, e.decision, e.ttl, e.flags, now, policy);
      if (rank === 0) continue;
      if (this.neverBlock.protects(e.values)) {
        protectedCount += 1;
        continue;
      }
      for (const value of e.values) chosen.push({ value, rank });
    }
    const { compare } = this.codec;
    // Highest rank first, then the codec's order: the capacity cut keeps the first `maximum_rules`.
    chosen.sort((a, b) => b.rank - a.rank || compare(a.value, b.value));
    const keep = Math.min(chosen.length, Math.max(0, policy.maximumRules));
    const kept = chosen.slice(0, keep).sort((a, b) => compare(a.value, b.value));
    const values = kept.map((c) => c.value);
    return { values, ranks: kept.map((c) => c.rank), index: new Set(values), cut: chosen.length - keep, protectedCount };
  }

  /**
   * The values the organization whitelisted by decision, sorted: never in the block set, and
   * handed to enforcers that can express an exception to a wider rule (`Enforcer.allow`).
   */
  allowed(): string[] {
    const values: string[] = [];
    for (const e of this.all) if (e.decision === 0) values.push(...e.values);
    return values.sort(this.codec.compare);
  }

  /** Epoch seconds at which the evaluation may next change by itself (decay). */
  nextChange(now: number, policy: BlockPolicy): number {
    let next = Infinity;
    for (const e of this.all) next = Math.min(next, entryNextChange(e.s0, e.ts, e.decision, e.ttl, now, policy));
    return next;
  }

  private canonicalAll(raw: readonly string[]): string[] {
    const out: string[] = [];
    for (const r of raw) {
      const v = r ? this.codec.canonical(r) : undefined;
      if (v !== undefined && !out.includes(v)) out.push(v);
    }
    return out;
  }

  private find(values: readonly string[]): NamedEntry | undefined {
    for (const v of values) {
      const e = this.byValue.get(v);
      if (e) return e;
    }
    return undefined;
  }

  /** Stores `next` under `values`, merging away every entry that shares one of them. */
  private upsert(values: readonly string[], next: NamedEntry): void {
    const merged = new Set(values);
    for (const v of values) {
      const old = this.byValue.get(v);
      if (!old) continue;
      for (const ov of old.values) merged.add(ov);
      this.remove(old);
    }
    next.values = [...merged].sort(this.codec.compare);
    this.all.add(next);
    for (const v of next.values) this.byValue.set(v, next);
  }

  private remove(entry: NamedEntry): void {
    this.all.delete(entry);
    for (const v of entry.values) if (this.byValue.get(v) === entry) this.byValue.delete(v);
  }
}

/** How many values of `from` are not in `to`. */
export function countNamedRemovals(from: NamedSet, to: NamedSet): number {
  let removed = 0;
  for (const v of from.values) if (!to.index.has(v)) removed += 1;
  return removed;
}

/** The changes from `from` to `to`: what an enforcer's `apply` needs. */
export function diffNamedSets(from: NamedSet, to: NamedSet): Diff {
  const add: BlockEntry[] = [];
  for (let i = 0; i < to.values.length; i++) if (!from.index.has(to.values[i]!)) add.push({ value: to.values[i]!, score: to.ranks[i]! });
  return { add, remove: from.values.filter((v) => !to.index.has(v)) };
}

/** How an enforcer worker reads a `NamedSet` (see `EnforcerWorkerDeps`). */
export const namedSetOps = {
  entries: (set: NamedSet): BlockEntry[] => set.values.map((value, i) => ({ value, score: set.ranks[i]! })),
  diff: diffNamedSets,
  size: (set: NamedSet): number => set.values.length,
  contains: (set: NamedSet, value: string): boolean => set.index.has(value),
};
