import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/**
 * An IPv4 MaxMind DB (MMDB, https://maxmind.github.io/MaxMind-DB/) read from its file without
 * holding it: the search tree (22 MB of the 28 MB city database) stays on disk and is walked
 * through a small cache of 4 kB blocks read with pread; only the data section (~6 MB: the
 * distinct locations) is held, as one buffer, and a record is decoded from it when asked for.
 * Answers are exactly those of the `maxmind` package's Reader over the whole file
 * (test/enrichment-compact.test.ts compares them on the real file).
 */

const METADATA_MARKER = Buffer.from('abcdef4d61784d696e642e636f6d', 'hex'); // \xAB\xCD\xEF MaxMind.com
const BLOCK = 4096;
/** Tree blocks kept: 2 MB. The top of the tree, which every walk crosses, stays in it. */
const BLOCKS_KEPT = 512;
/** A slot: one block and the 8 bytes after it. */
const SLOT = BLOCK + 8;

/** A decoder of the MMDB data format over one buffer; pointers are relative to `base` of it. */
class Decoder {
  constructor(
    private readonly buf: Buffer,
    private readonly base: number,
  ) {}

  /** The value at `offset` and the offset after it. */
  decode(offset: number): [unknown, number] {
    const ctrl = this.buf[offset++]!;
    let type = ctrl >> 5;
    if (type === 1) return this.pointer(ctrl, offset);
    if (type === 0) type = 7 + this.buf[offset++]!;
    let size = ctrl & 0x1f;
    if (size === 29) size = 29 + this.buf[offset++]!;
    else if (size === 30) {
      size = 285 + this.buf.readUInt16BE(offset);
      offset += 2;
    } else if (size === 31) {
      size = 65_821 + this.buf.readUIntBE(offset, 3);
      offset += 3;
    }
    return this.value(type, size, offset);
  }

  private pointer(ctrl: number, offset: number): [unknown, number] {
    const ss = (ctrl >> 3) & 3;
    const vv = ctrl & 7;
    const buf = this.buf;
    let p: number;
    if (ss === 0) p = (vv << 8) | buf[offset]!;
    else if (ss === 1) p = ((vv << 16) | buf.readUInt16BE(offset)) + 2048;
    else if (ss === 2) p = vv * 2 ** 24 + buf.readUIntBE(offset, 3) + 526_336;
    else p = buf.readUInt32BE(offset);
    return [this.decode(this.base + p)[0], offset + ss + 1];
  }

  private value(type: number, size: number, offset: number): [unknown, number] {
    const buf = this.buf;
    switch (type) {
      case 2:
        return [buf.toString('utf8', offset, offset + size), offset + size];
      case 3:
        return [buf.readDoubleBE(offset), offset + 8];
      case 4:
        return [buf.subarray(offset, offset + size), offset + size];
      case 5:
      case 6:
      case 9:
      case 10:
        return [size === 0 ? 0 : this.unsigned(offset, size), offset + size];
      case 7: {
        const out: Record<string, unknown> = {};
        for (let k = 0; k < size; k++) {
          const [key, next] = this.decode(offset);
          const [v, after] = this.decode(next);
          out[key as string] = v;
          offset = after;
        }
        return [out, offset];
      }
      case 8:
        return [size === 0 ? 0 : buf.readIntBE(offset, size) | 0, offset + size];
      case 11: {
        const out: unknown[] = [];
        for (let k = 0; k < size; k++) {
          const [v, next] = this.decode(offset);
          out.push(v);
          offset = next;
        }
        return [out, offset];
      }
      case 14:
        return [size !== 0, offset];
      case 15:
        return [buf.readFloatBE(offset), offset + 4];
      default:
        throw new Error(`MMDB: unknown data type ${type}`);
    }
  }

  private unsigned(offset: number, size: number): number | bigint {
    if (size <= 6) return this.buf.readUIntBE(offset, size);
    let n = 0n;
    for (let k = 0; k < size; k++) n = (n << 8n) | BigInt(this.buf[offset + k]!);
    return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
  }
}

interface Metadata {
  node_count: number;
  record_size: number;
  ip_version: number;
}

function readAt(fd: number, length: number, position: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, out, done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done === length ? out : out.subarray(0, done);
}

export class Ipv4Mmdb<Row> {
  private readonly fd: number;
  private readonly nodeCount: number;
  private readonly nodeBytes: number;
  private readonly recordSize: number;
  private readonly data: Decoder;
  /**
   * The block cache: BLOCKS_KEPT slots of one preallocated slab (a slot holds a block and the node
   * straddling its end), reused round-robin, so walks allocate nothing (4 kB buffers per read left
   * tens of MB of freed native memory resident after 10,000 look-ups).
   */
  private readonly slab = Buffer.alloc(BLOCKS_KEPT * SLOT);
  private readonly slotOf = new Map<number, number>();
  private readonly blockIn = new Int32Array(BLOCKS_KEPT).fill(-1);
  private nextSlot = 0;
  private readonly treeBytes: number;

  constructor(path: string) {
    this.fd = openSync(path, 'r');
    try {
      const size = fstatSync(this.fd).size;
      const tailLength = Math.min(size, 128 * 1024);
      const tail = readAt(this.fd, tailLength, size - tailLength);
      const at = tail.lastIndexOf(METADATA_MARKER);
      if (at < 0) throw new Error(`${path}: not a MaxMind DB (no metadata marker)`);
      const start = at + METADATA_MARKER.length;
      const meta = new Decoder(tail, start).decode(start)[0] as Metadata;
      if (meta.ip_version !== 4) throw new Error(`${path}: an IPv${meta.ip_version} tree, IPv4 expected`);
      if (![24, 28, 32].includes(meta.record_size)) throw new Error(`${path}: record size ${meta.record_size} not supported`);
      this.nodeCount = meta.node_count;
      this.recordSize = meta.record_size;
      this.nodeBytes = meta.record_size / 4;
      this.treeBytes = this.nodeCount * this.nodeBytes;
      const dataStart = this.treeBytes + 16;
      const dataEnd = size - tailLength + at;
      this.data = new Decoder(readAt(this.fd, dataEnd - dataStart, dataStart), 0);
    } catch (err) {
      closeSync(this.fd);
      throw err;
    }
  }

  /** The slab and the position in it of the tree's byte `offset` (its node whole). */
  private node(offset: number): { buf: Buffer; at: number } {
    const block = Math.floor(offset / BLOCK);
    let slot = this.slotOf.get(block);
    if (slot === undefined) {
      slot = this.nextSlot;
      this.nextSlot = (slot + 1) % BLOCKS_KEPT;
      const old = this.blockIn[slot]!;
      if (old >= 0) this.slotOf.delete(old);
      const length = Math.min(SLOT, this.treeBytes - block * BLOCK);
      for (let done = 0; done < length; ) {
        const n = readSync(this.fd, this.slab, slot * SLOT + done, length - done, block * BLOCK + done);
        if (n === 0) break;
        done += n;
      }
      this.blockIn[slot] = block;
      this.slotOf.set(block, slot);
    }
    return { buf: this.slab, at: slot * SLOT + offset - block * BLOCK };
  }

  private record(nodeNumber: number, right: boolean): number {
    const { buf, at } = this.node(nodeNumber * this.nodeBytes);
    if (this.recordSize === 24) return buf.readUIntBE(at + (right ? 3 : 0), 3);
    if (this.recordSize === 28) return right ? ((buf[at + 3]! & 0x0f) * 2 ** 24) + buf.readUIntBE(at + 4, 3) : ((buf[at + 3]! & 0xf0) >> 4) * 2 ** 24 + buf.readUIntBE(at, 3);
    return buf.readUInt32BE(at + (right ? 4 : 0));
  }

  /** The record of the network holding `ip` (an unsigned 32-bit number), or null. */
  get(ip: number): Row | null {
    let node = 0;
    for (let depth = 0; depth < 32 && node < this.nodeCount; depth++) node = this.record(node, ((ip >>> (31 - depth)) & 1) === 1);
    if (node <= this.nodeCount) return null;
    return this.data.decode(node - this.nodeCount - 16)[0] as Row;
  }

  close(): void {
    closeSync(this.fd);
  }
}
