import { canonicalIpv4Cidr } from '@rampart/contracts';
import { DesiredSet } from './desired-set.ts';
import type { BlockEntry, Diff } from './enforcer.ts';

/** How the enforced set changed: what to add to and delete from the target. */
export interface EnforcedChange {
  added: string[];
  removed: string[];
}

/**
 * The desired set and the part of it that fits in `capacity`, tracked so that a diff yields the
 * change to push to the target. While nothing is cut the enforced set *is* the desired set (no
 * copy) and a diff's change costs O(diff): a 1,000-entry diff against 100,000 entries must cost
 * far less than the backend's own commit. When the capacity binds, the kept set is recomputed.
 */
export class EnforcedSet {
  readonly desired = new DesiredSet();
  /** The kept CIDRs while the capacity cuts some; null while everything desired is enforced. */
  #kept: Set<string> | null = null;

  constructor(readonly capacity: number) {}

  /** Entries enforced. */
  get size(): number {
    return this.#kept ? this.#kept.size : this.desired.size;
  }

  /** Desired entries left out by the capacity. */
  get cut(): number {
    return this.desired.size - this.size;
  }

  has(cidr: string): boolean {
    return this.#kept ? this.#kept.has(cidr) : this.desired.has(cidr);
  }

  /** Canonical CIDRs enforced now (unordered). */
  cidrs(): IterableIterator<string> {
    return this.#kept ? this.#kept.values() : this.desired.cidrs();
  }

  replace(entries: readonly BlockEntry[]): void {
    this.desired.replace(entries);
    this.#kept = this.#keep();
  }

  clear(): void {
    this.desired.clear();
    this.#kept = null;
  }

  apply(diff: Diff): EnforcedChange {
    // Every CIDR the diff names, with whether it was enforced before.
    const touched = new Map<string, boolean>();
    const note = (raw: string) => {
      const cidr = canonicalIpv4Cidr(raw);
      if (cidr && !touched.has(cidr)) touched.set(cidr, this.has(cidr));
    };
    for (const raw of diff.remove) note(raw);
    for (const entry of diff.add) note(entry.value);
    const oldKept = this.#kept;
    this.desired.apply(diff);
    this.#kept = this.#keep();

    const added: string[] = [];
    const removed: string[] = [];
    if (!oldKept && !this.#kept) {
      // Enforced = desired before and after: only the CIDRs the diff names can have changed.
      for (const [cidr, before] of touched) {
        const now = this.desired.has(cidr);
        if (now && !before) added.push(cidr);
        else if (!now && before) removed.push(cidr);
      }
      return { added, removed };
    }
    const wasEnforced = (cidr: string) => (oldKept ? oldKept.has(cidr) : (touched.get(cidr) ?? this.desired.has(cidr)));
    for (const cidr of this.cidrs()) if (!wasEnforced(cidr)) added.push(cidr);
    if (oldKept) {
      for (const cidr of oldKept) if (!this.has(cidr)) removed.push(cidr);
    } else {
      // Before, everything desired was enforced: what is no longer enforced is a touched CIDR
      // that was, or a CIDR still desired that the new cut left out.
      for (const [cidr, before] of touched) if (before && !this.has(cidr)) removed.push(cidr);
      for (const cidr of this.desired.cidrs()) if (!touched.has(cidr) && !this.has(cidr)) removed.push(cidr);
    }
    return { added, removed };
  }

  #keep(): Set<string> | null {
    if (this.desired.size <= this.capacity) return null;
    return new Set(this.desired.withinCapacity(this.capacity).kept.map((e) => e.value));
  }
}
