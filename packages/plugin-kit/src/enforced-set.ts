import { canonicalCidr } from './block-list.ts';
import { DesiredSet } from './desired-set.ts';
import type { BlockEntry, Diff } from './enforcer.ts';

/** How the enforced set changed: what to add to and delete from the target. */
export interface EnforcedChange {
  added: string[];
  removed: string[];
}

/**
 * The desired set and the part of it that fits in `capacity`, tracked so that a diff yields the
 * change to push to the target. While nothing is cut the change is computed in O(diff) (a
 * 1,000-entry diff against a 100,000-entry set must cost far less than the backend's commit);
 * when the capacity binds, the cut is recomputed over the whole set.
 */
export class EnforcedSet {
  readonly desired = new DesiredSet();
  #enforced = new Set<string>();

  constructor(readonly capacity: number) {}

  /** Canonical CIDRs enforced now (unordered). */
  get enforced(): ReadonlySet<string> {
    return this.#enforced;
  }

  /** Desired entries left out by the capacity. */
  get cut(): number {
    return this.desired.size - this.#enforced.size;
  }

  replace(entries: readonly BlockEntry[]): EnforcedChange {
    this.desired.replace(entries);
    return this.#recompute();
  }

  apply(diff: Diff): EnforcedChange {
    const before = this.desired.size;
    if (before > this.capacity) {
      this.desired.apply(diff);
      return this.#recompute();
    }
    const removed = new Set<string>();
    for (const raw of diff.remove) {
      const cidr = canonicalCidr(raw);
      if (cidr && this.#enforced.has(cidr)) removed.add(cidr);
    }
    this.desired.apply(diff);
    if (this.desired.size > this.capacity) return this.#recompute();
    const added = new Set<string>();
    for (const entry of diff.add) {
      const cidr = canonicalCidr(entry.cidr);
      if (!cidr || !this.desired.has(cidr)) continue;
      // Removed and re-added in the same diff: it stays, so neither side touches the target.
      if (removed.delete(cidr)) continue;
      if (!this.#enforced.has(cidr)) added.add(cidr);
    }
    for (const cidr of removed) this.#enforced.delete(cidr);
    for (const cidr of added) this.#enforced.add(cidr);
    return { added: [...added], removed: [...removed] };
  }

  clear(): EnforcedChange {
    this.desired.clear();
    return this.#recompute();
  }

  #recompute(): EnforcedChange {
    const kept = new Set(this.desired.withinCapacity(this.capacity).kept.map((e) => e.cidr));
    const added: string[] = [];
    const removed: string[] = [];
    for (const cidr of kept) if (!this.#enforced.has(cidr)) added.push(cidr);
    for (const cidr of this.#enforced) if (!kept.has(cidr)) removed.push(cidr);
    this.#enforced = kept;
    return { added, removed };
  }
}
