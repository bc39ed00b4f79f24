import type { BlockEntry, Diff } from '@rampart/plugin-kit';
import { isBlocked, liveScore, secondsUntilBelow } from '@rampart/scoring';
import { FED, LISTED, RecordTable, UPDATED } from './record-table.ts';
import { ipv4Key, ipv4KeyCidr as keyCidr, ipv4KeyNet as keyNet } from '@rampart/contracts';
import type { NeverBlock } from './never-block.ts';

export interface BlockPolicy {
  threshold: number;
  maximumRules: number;
  blockingRule?: { score: number; tags: readonly string[] } | null | undefined;
}

/** A sorted set of net keys with the rank (live score, 1001 for a blacklist decision) of each. */
export interface KeySet {
  keys: Float64Array;
  ranks: Uint16Array;
}

export interface Evaluation extends KeySet {
  /** Entries left out because `maximum_rules` was reached (lowest ranks first). */
  cut: number;
  /** Entries left out by the never-block list. */
  protectedCount: number;
}

export const BLACKLIST_RANK = 1001;
const KEY_SPAN = 2 ** 38; // keys are < 2^32 * 64
const RANK_SPAN = 2048;

/**
 * Rank of one entry now (its live score, `BLACKLIST_RANK` for a blacklist decision), or 0 when it
 * should not be blocked: the rule of every indicator kind. `ttl` 0 means none; `flags` LISTED and
 * UPDATED (record-table.ts).
 */
export function entryRank(s0: number, ts: number, decision: number, ttl: number, flags: number, now: number, policy: BlockPolicy): number {
  const live = s0 > 0 ? liveScore(s0, now - ts) : 0;
  const verdict = isBlocked({
    reserved: false, // reserved_ips are in the never-block list, checked first
    decision: decision as -1 | 0 | 1,
    ttl: ttl === 0 ? null : ttl,
    now,
    liveScore: s0 > 0 ? live : 0,
    threshold: policy.threshold,
  });
  if (verdict.blocked) return verdict.reason === 'blacklist' ? BLACKLIST_RANK : Math.max(1, Math.round(live));
  if (verdict.reason === 'whitelist' || !(flags & LISTED)) return 0;
  // Listed by the server at the last reconcile but below our threshold here: the server
  // applied a rule whose inputs (tags of blocking_roule) the feed does not carry. Trust it until
  // the record changes or, with a rule, until the live score falls below the rule's score.
  // Known only from the list: trust it. A decision record the feed delivered (score 0) blocks by its decision alone.
  if (s0 === 0) return flags & FED ? 0 : Math.max(1, Math.min(1000, policy.threshold));
  if (flags & UPDATED) return 0;
  if (policy.blockingRule && live >= policy.blockingRule.score) return Math.max(1, Math.round(live));
  return 0;
}

/** Epoch seconds after `now` at which one entry's rank may change by itself (decay or a ttl ending); Infinity when never. */
export function entryNextChange(s0: number, ts: number, decision: number, ttl: number, now: number, policy: BlockPolicy): number {
  let next = Infinity;
  if (decision === 1 && ttl > now) next = Math.min(next, ttl);
  if (s0 > 0 && decision !== 0) {
    const at = ts + secondsUntilBelow(s0, policy.threshold);
    if (at > now) next = Math.min(next, at);
    if (policy.blockingRule) {
      const ruleAt = ts + secondsUntilBelow(s0, policy.blockingRule.score);
      if (ruleAt > now) next = Math.min(next, ruleAt);
    }
  }
  return next;
}

export interface FeedRecordInput {
  ip: string;
  score: number;
  ts: number;
  decision: -1 | 0 | 1;
  ttl: number | null;
}

/**
 * The agent's view of what to block. Records come from the /ips feed and decisions; the last
 * full reconcile's /ipv4 list marks entries LISTED. `evaluate` applies, for every entry, the
 * never-block list, then the decisions-page precedence (isBlocked from packages/scoring) with the
 * live score decayed to `now`, then `maximum_rules`, keeping the highest ranks.
 */
export class BlockState {
  table = new RecordTable();
  enforced: KeySet = { keys: new Float64Array(0), ranks: new Uint16Array(0) };
  /** Epoch seconds of the last full reconcile. */
  listedAt = 0;
  /** The feed second of the newest pushed decision applied, by key, until the feed catches up with it. */
  private readonly pushed = new Map<number, number>();

  constructor(public neverBlock: NeverBlock) {}

  ingestRecord(record: FeedRecordInput): boolean {
    const key = ipv4Key(record.ip);
    if (key < 0) return false;
    const previous = this.table.get(key);
    const pushed = this.pushed.get(key);
    if (pushed !== undefined && record.ts >= pushed) this.pushed.delete(key);
    this.table.set({
      key,
      s0: Math.max(0, Math.min(1000, Math.round(record.score))),
      ts: record.ts,
      decision: record.decision,
      ttl: record.ttl,
      flags: ((previous?.flags ?? 0) & LISTED) | UPDATED | FED,
    });
    return true;
  }

  /**
   * A decision pushed over the sync channel. `version` (the change's feed second, when the server
   * sends it) orders it against what the feed delivered: every change re-delivers its records in
   * the feed with a `ts` at least its second, and a record is served only once its second is
   * settled, so a record the feed delivered at `ts` >= `version` already holds this change or a
   * newer one. Such a push, or one older than a push already applied, arrived late (it waited
   * behind the feed pull that read the newer state) and is dropped: applied, it would take back
   * what the server still lists until that record changed again (issue 30).
   * A versioned clear (-1) changes nothing here: what follows it is the score, which the feed may
   * not have brought yet (a report made since the last pull), and the clear re-delivers the
   * record within a second anyway; applied at once, it took away an address its new score lists.
   */
  applyDecision(ip: string, decision: -1 | 0 | 1, ttl: number | null, now: number, version?: number): boolean {
    const key = ipv4Key(ip);
    if (key < 0) return false;
    const previous = this.table.get(key);
    if (version !== undefined) {
      if (previous && previous.flags & FED && previous.ts >= version) return false;
      if (version < (this.pushed.get(key) ?? -1)) return false;
      this.pushed.set(key, version);
      if (decision === -1) return false;
    }
    if (!previous && decision !== 1) return true;
    this.table.set({
      key,
      s0: previous?.s0 ?? 0,
      ts: previous?.ts ?? now,
      decision,
      ttl,
      flags: ((previous?.flags ?? 0) & (LISTED | FED)) | UPDATED,
    });
    return true;
  }

  /** Marks exactly the keys of the server list as LISTED; entries known only from it are added. */
  applyServerList(keys: ArrayLike<number>, now: number): number {
    this.table.clearFlags(LISTED | UPDATED);
    let count = 0;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      count += 1;
      const previous = this.table.get(key);
      if (previous) this.table.set({ ...previous, flags: previous.flags | LISTED });
      else this.table.set({ key, s0: 0, ts: now, decision: -1, ttl: null, flags: LISTED });
    }
    this.listedAt = now;
    this.prune(now);
    return count;
  }

  /** Drops entries that can never block again: list-only entries no longer listed, without a live decision. */
  prune(now: number): void {
    const drop: number[] = [];
    this.table.forEach((key, s0, _ts, decision, ttl, flags) => {
      const liveDecision = decision === 1 && (ttl === 0 || ttl > now);
      if (s0 === 0 && !(flags & LISTED) && !liveDecision) drop.push(key);
    });
    for (const key of drop) this.table.delete(key);
  }

  evaluate(now: number, policy: BlockPolicy): Evaluation {
    const packed = new Float64Array(this.table.size);
    let n = 0;
    let protectedCount = 0;
    this.table.forEach((key, s0, ts, decision, ttl, flags) => {
      const rank = entryRank(s0, ts, decision, ttl, flags, now, policy);
      if (rank === 0) return;
      const net = keyNet(key);
      if (this.neverBlock.protectsRange(net.start, net.end)) {
        protectedCount += 1;
        return;
      }
      // Highest rank first, then lowest key: one native numeric sort does the capacity cut.
      packed[n++] = (RANK_SPAN - 1 - rank) * KEY_SPAN + key;
    });
    const chosen = packed.subarray(0, n).sort();
    const keep = Math.min(n, Math.max(0, policy.maximumRules));
    // Re-keyed in place (the kept prefix, by key): no second array of the table's size.
    const byKey = chosen.subarray(0, keep);
    for (let i = 0; i < keep; i++) {
      const value = byKey[i]!;
      const key = value % KEY_SPAN;
      const rank = RANK_SPAN - 1 - (value - key) / KEY_SPAN;
      byKey[i] = key * RANK_SPAN + rank;
    }
    byKey.sort();
    const keys = new Float64Array(keep);
    const ranks = new Uint16Array(keep);
    for (let i = 0; i < keep; i++) {
      const value = byKey[i]!;
      const rank = value % RANK_SPAN;
      keys[i] = (value - rank) / RANK_SPAN;
      ranks[i] = rank;
    }
    return { keys, ranks, cut: n - keep, protectedCount };
  }

  /** Epoch seconds at which the evaluation may next change by itself (decay or a ttl ending). */
  nextChange(now: number, policy: BlockPolicy): number {
    let next = Infinity;
    this.table.forEach((_key, s0, ts, decision, ttl, _flags) => {
      next = Math.min(next, entryNextChange(s0, ts, decision, ttl, now, policy));
    });
    return next;
  }
}

/** How many keys of `from` are not in `to` (both sorted), without building the diff. */
export function countRemovals(from: KeySet, to: KeySet): number {
  let removed = 0;
  let j = 0;
  for (let i = 0; i < from.keys.length; i++) {
    const key = from.keys[i]!;
    while (j < to.keys.length && to.keys[j]! < key) j++;
    if (j >= to.keys.length || to.keys[j] !== key) removed++;
  }
  return removed;
}

/** The changes from `from` to `to` (both sorted): what an enforcer's `apply` needs. */
export function diffKeySets(from: KeySet, to: KeySet): Diff {
  const add: BlockEntry[] = [];
  const remove: string[] = [];
  let i = 0;
  let j = 0;
  while (i < from.keys.length || j < to.keys.length) {
    const a = i < from.keys.length ? from.keys[i]! : Infinity;
    const b = j < to.keys.length ? to.keys[j]! : Infinity;
    if (a === b) {
      // A rank that changed is no change for an enforcer: ranks only order the capacity cut.
      i++;
      j++;
    } else if (a < b) {
      remove.push(keyCidr(a));
      i++;
    } else {
      add.push({ value: keyCidr(b), score: to.ranks[j]! });
      j++;
    }
  }
  return { add, remove };
}

export function toEntries(set: KeySet): BlockEntry[] {
  const out: BlockEntry[] = new Array(set.keys.length);
  for (let i = 0; i < set.keys.length; i++) out[i] = { value: keyCidr(set.keys[i]!), score: set.ranks[i]! };
  return out;
}

/** Binary search in a sorted key array. */
export function hasKey(keys: Float64Array, key: number): boolean {
  if (key < 0) return false;
  let lo = 0;
  let hi = keys.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const k = keys[mid]!;
    if (k === key) return true;
    if (k < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/** How an enforcer worker reads an IPv4 `KeySet` (see `EnforcerWorkerDeps`). */
export const ipv4SetOps = {
  entries: toEntries,
  diff: diffKeySets,
  size: (set: KeySet): number => set.keys.length,
  contains: (set: KeySet, value: string): boolean => hasKey(set.keys, ipv4Key(value)),
};
