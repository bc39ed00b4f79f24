import type { BlockEntry, Diff } from '../enforcer.ts';
import { DesiredSet } from './desired-set.ts';
import { ipv4Codec, type KindCodec } from './codec.ts';

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
  readonly desired: DesiredSet;
  /** The kept values while the capacity cuts some; null while everything desired is enforced. */
  #kept: Set<string> | null = null;

  constructor(
    readonly capacity: number,
    codec: KindCodec = ipv4Codec,
    accepts?: (value: string) => boolean,
    ordered = false,
  ) {
    this.desired = new DesiredSet(codec, accepts, ordered);
  }

  /** Entries enforced. */
  get size(): number {
    return this.#kept ? this.#kept.size : this.desired.size;
  }

  /** Desired entries left out by the capacity. */
  get cut(): number {
    return this.desired.size - this.size;
  }

  has(value: string): boolean {
    return this.#kept ? this.#kept.has(value) : this.desired.has(value);
  }

  /** Canonical values enforced now (unordered). */
  values(): IterableIterator<string> {
    return this.#kept ? this.#kept.values() : this.desired.values();
  }

  /** Enforced entries with their scores, in the desired set's order (list order when it is `ordered`). */
  entries(): BlockEntry[] {
    const all = this.desired.entries();
    const kept = this.#kept;
    return kept ? all.filter((e) => kept.has(e.value)) : all;
  }

  replace(entries: readonly BlockEntry[]): void {
    this.desired.replace(entries);
    this.#kept = this.#keep();
  }

  /** `replace` with `orderInput`'s output (owned from now on); false (nothing done) when the capacity would cut. */
  replaceChecked(entries: BlockEntry[], keys: Float64Array, invalid: number): boolean {
    if (entries.length > this.capacity) return false;
    this.desired.replaceChecked(entries, keys, invalid);
    this.#kept = null;
    return true;
  }

  clear(): void {
    this.desired.clear();
    this.#kept = null;
  }

  apply(diff: Diff): EnforcedChange {
    // Every value the diff names, with whether it was enforced before.
    const touched = new Map<string, boolean>();
    const note = (raw: string) => {
      const value = this.desired.canonical(raw);
      if (value !== undefined && !touched.has(value)) touched.set(value, this.has(value));
    };
    for (const raw of diff.remove) note(raw);
    for (const entry of diff.add) note(entry.value);
    const oldKept = this.#kept;
    this.desired.apply(diff);
    this.#kept = this.#keep();

    const added: string[] = [];
    const removed: string[] = [];
    if (!oldKept && !this.#kept) {
      // Enforced = desired before and after: only the values the diff names can have changed.
      for (const [value, before] of touched) {
        const now = this.desired.has(value);
        if (now && !before) added.push(value);
        else if (!now && before) removed.push(value);
      }
      return { added, removed };
    }
    const wasEnforced = (value: string) => (oldKept ? oldKept.has(value) : (touched.get(value) ?? this.desired.has(value)));
    for (const value of this.values()) if (!wasEnforced(value)) added.push(value);
    if (oldKept) {
      for (const value of oldKept) if (!this.has(value)) removed.push(value);
    } else {
      // Before, everything desired was enforced: what is no longer enforced is a touched value
      // that was, or a value still desired that the new cut left out.
      for (const [value, before] of touched) if (before && !this.has(value)) removed.push(value);
      for (const value of this.desired.values()) if (!touched.has(value) && !this.has(value)) removed.push(value);
    }
    return { added, removed };
  }

  #keep(): Set<string> | null {
    if (this.desired.size <= this.capacity) return null;
    return new Set(this.desired.withinCapacity(this.capacity).kept.map((e) => e.value));
  }
}
