import { ipv4Key, ipv4KeyCidr } from '@rampart/contracts';
import type { BlockEntry, Diff } from '@rampart/plugin-kit';

/*
 * A block set of up to millions of IPv4 CIDRs kept as sorted typed arrays (12 bytes an entry)
 * instead of a Map of strings (~80 bytes an entry): the dry-run enforcer must not be what makes
 * an agent with a 1,000,000-address list need more memory than a real packet filter would.
 * Key = address * 64 + prefix length: exact in a double and sorts by address, then prefix.
 */

/** The key of strict IPv4 text (@rampart/contracts' grammar), undefined when it is not IPv4. */
export function cidrKey(text: string): number | undefined {
  const key = ipv4Key(text);
  return key < 0 ? undefined : key;
}

export const keyCidr: (key: number) => string = ipv4KeyCidr;

function writeDecimal(buf: Buffer, at: number, value: number): number {
  if (value >= 100) buf[at++] = 48 + Math.floor(value / 100);
  if (value >= 10) buf[at++] = 48 + (Math.floor(value / 10) % 10);
  buf[at++] = 48 + (value % 10);
  return at;
}

/** Writes the CIDR of `key` as ASCII at `at`; returns the offset after it. */
export function writeCidr(buf: Buffer, at: number, key: number): number {
  const prefix = key % 64;
  const ip = (key - prefix) / 64;
  at = writeDecimal(buf, at, ip >>> 24);
  buf[at++] = 46;
  at = writeDecimal(buf, at, (ip >>> 16) & 255);
  buf[at++] = 46;
  at = writeDecimal(buf, at, (ip >>> 8) & 255);
  buf[at++] = 46;
  at = writeDecimal(buf, at, ip & 255);
  buf[at++] = 47;
  return writeDecimal(buf, at, prefix);
}

export class CompactSet {
  keys = new Float64Array(0);
  scores = new Float32Array(0);
  invalid = 0;

  get size(): number {
    return this.keys.length;
  }

  /** Sorts typed arrays in place (no per-entry objects), so a million entries cost ~24 MB at peak. */
  replace(entries: readonly BlockEntry[]): void {
    this.invalid = 0;
    const keys = new Float64Array(entries.length);
    const scores = new Float32Array(entries.length);
    let n = 0;
    for (const entry of entries) {
      const key = cidrKey(entry.value);
      if (key === undefined || !Number.isFinite(entry.score)) {
        this.invalid += 1;
        continue;
      }
      keys[n] = key;
      scores[n++] = entry.score;
    }
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    order.sort((a, b) => keys[a]! - keys[b]! || scores[b]! - scores[a]!);
    // Duplicates are adjacent now, the highest score first: keep that one.
    const outKeys = new Float64Array(n);
    const outScores = new Float32Array(n);
    let m = 0;
    for (let i = 0; i < n; i++) {
      const k = keys[order[i]!]!;
      if (m > 0 && outKeys[m - 1] === k) continue;
      outKeys[m] = k;
      outScores[m++] = scores[order[i]!]!;
    }
    this.keys = outKeys.slice(0, m);
    this.scores = outScores.slice(0, m);
  }

  /** Removals first, then additions; returns the CIDRs really added and removed. */
  apply(diff: Diff): { added: string[]; removed: string[] } {
    const current = new Map<number, number>();
    const removedKeys = new Set<number>();
    for (const raw of diff.remove) {
      const key = cidrKey(raw);
      if (key === undefined) this.invalid += 1;
      else if (this.indexOf(key) >= 0) removedKeys.add(key);
    }
    const addPairs = this.parse(diff.add);
    const added: string[] = [];
    for (const [key, score] of addPairs) {
      if (removedKeys.has(key)) removedKeys.delete(key);
      else if (this.indexOf(key) < 0 && !current.has(key)) added.push(keyCidr(key));
      current.set(key, score);
    }
    const pairs: [number, number][] = [];
    for (let i = 0; i < this.keys.length; i++) {
      const key = this.keys[i]!;
      if (current.has(key)) continue;
      if (!removedKeys.has(key)) pairs.push([key, this.scores[i]!]);
    }
    for (const pair of current) pairs.push(pair);
    this.build(pairs);
    return { added, removed: [...removedKeys].map(keyCidr) };
  }

  *cidrs(): Generator<string> {
    for (const key of this.keys) yield keyCidr(key);
  }

  private indexOf(key: number): number {
    let lo = 0;
    let hi = this.keys.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const k = this.keys[mid]!;
      if (k === key) return mid;
      if (k < key) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  private parse(entries: readonly BlockEntry[]): Map<number, number> {
    this.invalid = 0;
    const pairs = new Map<number, number>();
    for (const entry of entries) {
      const key = cidrKey(entry.value);
      if (key === undefined || !Number.isFinite(entry.score)) {
        this.invalid += 1;
        continue;
      }
      pairs.set(key, Math.max(pairs.get(key) ?? -Infinity, entry.score));
    }
    return pairs;
  }

  private build(pairs: Iterable<[number, number]>): void {
    const list = [...pairs].sort((a, b) => a[0] - b[0]);
    this.keys = Float64Array.from(list, (p) => p[0]);
    this.scores = Float32Array.from(list, (p) => p[1]);
  }
}
