/*
 * What the agent knows about each indicator, for up to millions of entries at ~22 bytes each:
 * an open-addressing hash table (linear probing, backward-shift deletion) over typed arrays,
 * keyed by the IPv4 net key (ipv4.ts), 17 bytes a slot at a load of at most three quarters,
 * grown by half (slot = hash scaled to the capacity, which need not be a power of two): at
 * 1,000,000 entries 1.5 M slots, 25.7 MB (35.6 MB at a load of one half and doubling, issue 35
 * item 7). A Map of objects would cost ~150 bytes an entry.
 */

/** The server's /ipv4 list named this entry at the last full reconcile. */
export const LISTED = 1;
/** A feed record or a decision arrived for it after that reconcile. */
export const UPDATED = 2;
/**
 * The feed delivered a record for it: its score is the server's, so a score of 0 is a decision
 * record (a decision on a value nobody reported), not an entry known only from the list.
 */
export const FED = 4;

export interface TableEntry {
  key: number;
  /** Score at time zero; 0 when only the server list or a decision named it. */
  s0: number;
  /** Time zero of the decay clock, epoch seconds. */
  ts: number;
  decision: -1 | 0 | 1;
  /** Epoch seconds; null when the decision has no end. */
  ttl: number | null;
  flags: number;
}

/** Prefix value of an empty slot (real prefixes are 0..32). */
const EMPTY = 255;
const MIN_CAPACITY = 1024;
/** Most entries a table of `slots` holds before it grows (a load of three quarters). */
const fill = (slots: number) => Math.floor((slots * 3) / 4);

function hashOf(ip: number, prefix: number): number {
  let h = Math.imul(ip ^ Math.imul(prefix + 1, 0x85ebca6b), 0x9e3779b1);
  h ^= h >>> 15;
  return h >>> 0;
}

export class RecordTable {
  // The key (ip * 64 + prefix) split in two arrays: 5 bytes a slot instead of 8.
  private ips: Uint32Array;
  private prefixes: Uint8Array; // EMPTY marks an empty slot
  private s0: Uint16Array;
  private ts: Uint32Array;
  private ttl: Uint32Array; // 0 = null
  private decision: Int8Array;
  private flags: Uint8Array;
  private count = 0;

  constructor(capacity = MIN_CAPACITY) {
    let size = MIN_CAPACITY;
    while (fill(size) < capacity) size = Math.ceil(size * 1.5);
    this.ips = new Uint32Array(size);
    this.prefixes = new Uint8Array(size).fill(EMPTY);
    this.s0 = new Uint16Array(size);
    this.ts = new Uint32Array(size);
    this.ttl = new Uint32Array(size);
    this.decision = new Int8Array(size);
    this.flags = new Uint8Array(size);
  }

  get size(): number {
    return this.count;
  }

  /** The slot a probe for (ip, prefix) starts at: the 32-bit hash scaled to the capacity. */
  private homeOf(ip: number, prefix: number): number {
    const size = this.prefixes.length;
    return Math.min(size - 1, Math.floor((hashOf(ip, prefix) / 4294967296) * size));
  }

  private slotOf(key: number): number {
    const size = this.prefixes.length;
    const prefix = key % 64;
    const ip = (key - prefix) / 64;
    let slot = this.homeOf(ip, prefix);
    while (this.prefixes[slot] !== EMPTY && !(this.prefixes[slot] === prefix && this.ips[slot] === ip)) slot = slot + 1 === size ? 0 : slot + 1;
    return slot;
  }

  get(key: number): TableEntry | undefined {
    const slot = this.slotOf(key);
    return this.prefixes[slot] === EMPTY ? undefined : this.read(slot);
  }

  has(key: number): boolean {
    return this.prefixes[this.slotOf(key)] !== EMPTY;
  }

  set(entry: TableEntry): void {
    if (this.count + 1 > fill(this.prefixes.length)) this.grow();
    const slot = this.slotOf(entry.key);
    if (this.prefixes[slot] === EMPTY) this.count += 1;
    const prefix = entry.key % 64;
    this.prefixes[slot] = prefix;
    this.ips[slot] = (entry.key - prefix) / 64;
    this.s0[slot] = entry.s0;
    this.ts[slot] = entry.ts;
    this.ttl[slot] = entry.ttl ?? 0;
    this.decision[slot] = entry.decision;
    this.flags[slot] = entry.flags;
  }

  delete(key: number): boolean {
    const size = this.prefixes.length;
    const after = (at: number) => (at + 1 === size ? 0 : at + 1);
    let slot = this.slotOf(key);
    if (this.prefixes[slot] === EMPTY) return false;
    this.count -= 1;
    // Backward-shift deletion: later members of the probe run move up so lookups stay correct.
    let next = after(slot);
    while (this.prefixes[next] !== EMPTY) {
      const home = this.homeOf(this.ips[next]!, this.prefixes[next]!);
      const distanceNext = (next - home + size) % size;
      const distanceHole = (slot - home + size) % size;
      if (distanceHole < distanceNext || distanceHole === distanceNext) {
        // `next`'s home is at or before the hole, cyclically: move it into the hole.
        this.move(next, slot);
        slot = next;
      }
      next = after(next);
    }
    this.prefixes[slot] = EMPTY;
    return true;
  }

  *entries(): Generator<TableEntry> {
    for (let slot = 0; slot < this.prefixes.length; slot++) if (this.prefixes[slot] !== EMPTY) yield this.read(slot);
  }

  /** Visits every entry without allocating; `visit` may not modify the table. */
  forEach(visit: (key: number, s0: number, ts: number, decision: number, ttl: number, flags: number) => void): void {
    for (let slot = 0; slot < this.prefixes.length; slot++) {
      const prefix = this.prefixes[slot]!;
      if (prefix !== EMPTY) visit(this.ips[slot]! * 64 + prefix, this.s0[slot]!, this.ts[slot]!, this.decision[slot]!, this.ttl[slot]!, this.flags[slot]!);
    }
  }

  /** Clears `bits` in every entry's flags. */
  clearFlags(bits: number): void {
    const keep = ~bits & 0xff;
    for (let slot = 0; slot < this.flags.length; slot++) this.flags[slot]! &= keep;
  }

  clear(): void {
    this.prefixes.fill(EMPTY);
    this.count = 0;
  }

  private move(from: number, to: number): void {
    this.ips[to] = this.ips[from]!;
    this.prefixes[to] = this.prefixes[from]!;
    this.s0[to] = this.s0[from]!;
    this.ts[to] = this.ts[from]!;
    this.ttl[to] = this.ttl[from]!;
    this.decision[to] = this.decision[from]!;
    this.flags[to] = this.flags[from]!;
  }

  private read(slot: number): TableEntry {
    const ttl = this.ttl[slot]!;
    return {
      key: this.ips[slot]! * 64 + this.prefixes[slot]!,
      s0: this.s0[slot]!,
      ts: this.ts[slot]!,
      decision: this.decision[slot]! as -1 | 0 | 1,
      ttl: ttl === 0 ? null : ttl,
      flags: this.flags[slot]!,
    };
  }

  /** Grows the arrays by half and re-inserts slot by slot (no per-entry objects: this runs at a million entries). */
  private grow(): void {
    const { ips, prefixes, s0, ts, ttl, decision, flags } = this;
    const size = Math.ceil(prefixes.length * 1.5);
    this.ips = new Uint32Array(size);
    this.prefixes = new Uint8Array(size).fill(EMPTY);
    this.s0 = new Uint16Array(size);
    this.ts = new Uint32Array(size);
    this.ttl = new Uint32Array(size);
    this.decision = new Int8Array(size);
    this.flags = new Uint8Array(size);
    for (let from = 0; from < prefixes.length; from++) {
      const prefix = prefixes[from]!;
      if (prefix === EMPTY) continue;
      const to = this.slotOf(ips[from]! * 64 + prefix);
      this.ips[to] = ips[from]!;
      this.prefixes[to] = prefix;
      this.s0[to] = s0[from]!;
      this.ts[to] = ts[from]!;
      this.ttl[to] = ttl[from]!;
      this.decision[to] = decision[from]!;
      this.flags[to] = flags[from]!;
    }
  }

  /**
   * Binary snapshot: [count u32][key f64, s0 u16, ts u32, ttl u32, decision i8, flags u8] per
   * entry, after `headroom` bytes left for the caller (a file header: no second copy of ~20 MB
   * at a million entries to prepend one).
   */
  serialize(headroom = 0): Buffer {
    const RECORD = 8 + 2 + 4 + 4 + 1 + 1;
    const buf = Buffer.allocUnsafe(headroom + 4 + this.count * RECORD);
    buf.writeUInt32LE(this.count, headroom);
    let offset = headroom + 4;
    this.forEach((key, s0, ts, decision, ttl, flags) => {
      buf.writeDoubleLE(key, offset);
      buf.writeUInt16LE(s0, offset + 8);
      buf.writeUInt32LE(ts, offset + 10);
      buf.writeUInt32LE(ttl, offset + 14);
      buf.writeInt8(decision, offset + 18);
      buf.writeUInt8(flags, offset + 19);
      offset += RECORD;
    });
    return buf;
  }

  static deserialize(buf: Buffer): RecordTable {
    const RECORD = 20;
    const count = buf.readUInt32LE(0);
    if (buf.length !== 4 + count * RECORD) throw new Error('record table snapshot has the wrong length');
    const table = new RecordTable(count);
    for (let i = 0, offset = 4; i < count; i++, offset += RECORD) {
      const ttl = buf.readUInt32LE(offset + 14);
      table.set({
        key: buf.readDoubleLE(offset),
        s0: buf.readUInt16LE(offset + 8),
        ts: buf.readUInt32LE(offset + 10),
        ttl: ttl === 0 ? null : ttl,
        decision: buf.readInt8(offset + 18) as -1 | 0 | 1,
        flags: buf.readUInt8(offset + 19),
      });
    }
    return table;
  }
}
