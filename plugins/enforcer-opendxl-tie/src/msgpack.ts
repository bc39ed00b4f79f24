/*
 * The part of MessagePack (https://msgpack.org/) that DXL envelopes use: nil, booleans,
 * integers, strings, binary, arrays and maps (floats are read, never written). DXL frames are a
 * sequence of packed values, not one array, so `MsgpackReader` reads them one at a time.
 */

export type Packable = null | boolean | number | string | Uint8Array | Packable[];
export type Unpacked = null | boolean | number | string | Buffer | Unpacked[] | Map<Unpacked, Unpacked>;

export class MsgpackError extends Error {
  readonly code = 'DXL_MALFORMED_MESSAGE';
  constructor(message: string) {
    super(message);
    this.name = 'MsgpackError';
  }
}

function header(small: number, bytes8: number | undefined, bytes16: number, bytes32: number, length: number, smallMax: number): Buffer {
  if (length <= smallMax) return Buffer.from([small | length]);
  if (bytes8 !== undefined && length <= 0xff) return Buffer.from([bytes8, length]);
  if (length <= 0xffff) {
    const b = Buffer.alloc(3);
    b[0] = bytes16;
    b.writeUInt16BE(length, 1);
    return b;
  }
  const b = Buffer.alloc(5);
  b[0] = bytes32;
  b.writeUInt32BE(length, 1);
  return b;
}

function packInt(n: number): Buffer {
  if (!Number.isSafeInteger(n)) throw new MsgpackError(`cannot pack ${n}: only safe integers`);
  if (n >= 0 && n <= 0x7f) return Buffer.from([n]);
  if (n < 0 && n >= -32) return Buffer.from([n & 0xff]);
  if (n >= 0) {
    if (n <= 0xff) return Buffer.from([0xcc, n]);
    if (n <= 0xffff) return Buffer.from([0xcd, n >> 8, n & 0xff]);
    if (n <= 0xffffffff) {
      const b = Buffer.alloc(5);
      b[0] = 0xce;
      b.writeUInt32BE(n, 1);
      return b;
    }
    const b = Buffer.alloc(9);
    b[0] = 0xcf;
    b.writeBigUInt64BE(BigInt(n), 1);
    return b;
  }
  const b = Buffer.alloc(9);
  b[0] = 0xd3;
  b.writeBigInt64BE(BigInt(n), 1);
  return b;
}

/** One value, packed. Strings are UTF-8 `str`, byte arrays `bin`. */
export function pack(value: Packable): Buffer {
  if (value === null) return Buffer.from([0xc0]);
  if (value === false) return Buffer.from([0xc2]);
  if (value === true) return Buffer.from([0xc3]);
  if (typeof value === 'number') return packInt(value);
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([header(0xa0, 0xd9, 0xda, 0xdb, bytes.length, 31), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([header(0xc4, 0xc4, 0xc5, 0xc6, value.length, -1), value]);
  return Buffer.concat([header(0x90, undefined, 0xdc, 0xdd, value.length, 15), ...value.map(pack)]);
}

/** Several values one after the other (a DXL frame). */
export function packAll(values: readonly Packable[]): Buffer {
  return Buffer.concat(values.map(pack));
}

/** Reads packed values one after the other from `buffer`. */
export class MsgpackReader {
  #offset = 0;
  constructor(private readonly buffer: Buffer) {}

  get done(): boolean {
    return this.#offset >= this.buffer.length;
  }

  #take(n: number): Buffer {
    if (this.#offset + n > this.buffer.length) throw new MsgpackError('truncated MessagePack value');
    const out = this.buffer.subarray(this.#offset, this.#offset + n);
    this.#offset += n;
    return out;
  }

  #byte(): number {
    return this.#take(1)[0]!;
  }

  #uint(bytes: 1 | 2 | 4 | 8): number {
    const b = this.#take(bytes);
    if (bytes === 1) return b[0]!;
    if (bytes === 2) return b.readUInt16BE(0);
    if (bytes === 4) return b.readUInt32BE(0);
    return Number(b.readBigUInt64BE(0));
  }

  #int(bytes: 1 | 2 | 4 | 8): number {
    const b = this.#take(bytes);
    if (bytes === 1) return b.readInt8(0);
    if (bytes === 2) return b.readInt16BE(0);
    if (bytes === 4) return b.readInt32BE(0);
    return Number(b.readBigInt64BE(0));
  }

  #array(n: number): Unpacked[] {
    return Array.from({ length: n }, () => this.read());
  }

  #map(n: number): Map<Unpacked, Unpacked> {
    const map = new Map<Unpacked, Unpacked>();
    for (let i = 0; i < n; i++) {
      const key = this.read();
      map.set(key, this.read());
    }
    return map;
  }

  /** The next value; throws on truncated input and on types DXL does not use (ext). */
  read(): Unpacked {
    const t = this.#byte();
    if (t <= 0x7f) return t;
    if (t >= 0xe0) return t - 0x100;
    if (t >= 0xa0 && t <= 0xbf) return this.#take(t & 0x1f).toString('utf8');
    if (t >= 0x90 && t <= 0x9f) return this.#array(t & 0x0f);
    if (t >= 0x80 && t <= 0x8f) return this.#map(t & 0x0f);
    switch (t) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return Buffer.from(this.#take(this.#uint(1)));
      case 0xc5:
        return Buffer.from(this.#take(this.#uint(2)));
      case 0xc6:
        return Buffer.from(this.#take(this.#uint(4)));
      case 0xca:
        return this.#take(4).readFloatBE(0);
      case 0xcb:
        return this.#take(8).readDoubleBE(0);
      case 0xcc:
        return this.#uint(1);
      case 0xcd:
        return this.#uint(2);
      case 0xce:
        return this.#uint(4);
      case 0xcf:
        return this.#uint(8);
      case 0xd0:
        return this.#int(1);
      case 0xd1:
        return this.#int(2);
      case 0xd2:
        return this.#int(4);
      case 0xd3:
        return this.#int(8);
      case 0xd9:
        return this.#take(this.#uint(1)).toString('utf8');
      case 0xda:
        return this.#take(this.#uint(2)).toString('utf8');
      case 0xdb:
        return this.#take(this.#uint(4)).toString('utf8');
      case 0xdc:
        return this.#array(this.#uint(2));
      case 0xdd:
        return this.#array(this.#uint(4));
      case 0xde:
        return this.#map(this.#uint(2));
      case 0xdf:
        return this.#map(this.#uint(4));
      default:
        throw new MsgpackError(`unsupported MessagePack type 0x${t.toString(16)}`);
    }
  }
}
