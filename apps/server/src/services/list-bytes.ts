/**
 * Plain-text list lines written straight into bytes: no string per field or line, so a list of a
 * million rows leaves next to no garbage. Every writer here produces exactly the bytes of its
 * string twin (named on each), which the list tests compare byte for byte.
 */

/** Below this, a number's digits come from a table: octets, scores and most counts. */
const SMALL = 1024;
/** The decimal digits of n < SMALL at [8n, 8n + length), the length at 8n + 7. */
const DIGITS = new Uint8Array(SMALL * 8);
for (let n = 0; n < SMALL; n++) {
  const text = String(n);
  for (let k = 0; k < text.length; k++) DIGITS[n * 8 + k] = text.charCodeAt(k);
  DIGITS[n * 8 + 7] = text.length;
}

/** "00".."99" as byte pairs. */
const PAIRS = new Uint8Array(200);
for (let n = 0; n < 100; n++) {
  PAIRS[n * 2] = 48 + Math.floor(n / 10);
  PAIRS[n * 2 + 1] = 48 + (n % 10);
}

/** Past 9999-12-31 toISOString writes six-digit years: those (and negatives) take the slow path. */
const ISO_FAST_LIMIT = 253_402_300_800;

/** Whole seconds of epoch microseconds, rounded down (exactly: the quotient is corrected, not trusted). */
export function floorSeconds(micros: number): number {
  const s = Math.floor(micros / 1e6);
  return s * 1e6 > micros ? s - 1 : (s + 1) * 1e6 <= micros ? s + 1 : s;
}

const EMPTY = Buffer.alloc(0);

/** A growable byte buffer with decimal, address and date writers. */
export class ByteWriter {
  private buf: Buffer;
  private pos = 0;
  /** The day whose "YYYY-MM-DDT" prefix is cached (days since 1970). */
  private day = Number.NaN;
  private readonly dayText = Buffer.alloc(11);

  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, 64));
  }

  get length(): number {
    return this.pos;
  }

  /** Makes room for `n` more bytes. */
  reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n, 256));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /** The bytes written so far, and a fresh start (the writer keeps no reference to them). */
  take(): Buffer {
    const out = this.buf.subarray(0, this.pos);
    // The next write allocates again: most writers are taken once and dropped.
    this.buf = EMPTY;
    this.pos = 0;
    return out;
  }

  byte(c: number): void {
    this.reserve(1);
    this.buf[this.pos++] = c;
  }

  /** Bytes start..end of `src`. */
  range(src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    this.reserve(n);
    const buf = this.buf;
    const p = this.pos;
    // A short copy by hand is several times cheaper than TypedArray#set.
    if (n > 32) buf.set(src.subarray(start, end), p);
    else for (let k = 0; k < n; k++) buf[p + k] = src[start + k]!;
    this.pos = p + n;
  }

  /** Text of any characters, as UTF-8. */
  text(s: string): void {
    this.reserve(Buffer.byteLength(s));
    this.pos += this.buf.write(s, this.pos);
  }

  /** `String(n)` for a safe integer. */
  int(n: number): void {
    this.reserve(17);
    if (n < 0) {
      this.buf[this.pos++] = 45;
      n = -n;
    }
    if (n < SMALL) {
      this.small(n);
      return;
    }
    let digits = 0;
    for (let m = n; m >= 1; m = Math.floor(m / 10)) digits++;
    let at = this.pos + digits;
    this.pos = at;
    while (n >= 1) {
      const q = Math.floor(n / 10);
      this.buf[--at] = 48 + (n - q * 10);
      n = q;
    }
  }

  /** The digits of an integer 0 <= n < SMALL, room already reserved. */
  private small(n: number): void {
    const o = n * 8;
    const len = DIGITS[o + 7]!;
    const buf = this.buf;
    const p = this.pos;
    buf[p] = DIGITS[o]!;
    if (len > 1) buf[p + 1] = DIGITS[o + 1]!;
    if (len > 2) buf[p + 2] = DIGITS[o + 2]!;
    if (len > 3) buf[p + 3] = DIGITS[o + 3]!;
    this.pos = p + len;
  }

  /** Dotted decimal of an unsigned 32-bit address. */
  address(addr: number): void {
    this.reserve(15);
    this.small(addr >>> 24);
    this.buf[this.pos++] = 46;
    this.small((addr >>> 16) & 255);
    this.buf[this.pos++] = 46;
    this.small((addr >>> 8) & 255);
    this.buf[this.pos++] = 46;
    this.small(addr & 255);
  }

  /** A /32 as the bare address, a network as address/len (`displayIp` of the lists). */
  network(addr: number, len: number): void {
    this.address(addr);
    if (len !== 32) {
      this.byte(47);
      this.int(len);
    }
  }

  /** `x.toFixed(2)` for a finite x >= 0 below 1e15. */
  fixed2(x: number): void {
    const scaled = x * 100;
    const whole = Math.floor(scaled);
    // Within a hair of a tie the float product may have rounded across it: toFixed decides.
    if (Math.abs(scaled - whole - 0.5) < 1e-6 || !(x >= 0) || x >= 1e13) {
      this.text(x.toFixed(2));
      return;
    }
    const n = scaled - whole < 0.5 ? whole : whole + 1;
    const units = Math.floor(n / 100);
    this.reserve(20);
    if (units < SMALL) this.small(units);
    else this.int(units);
    const cents = (n - units * 100) * 2;
    this.buf[this.pos++] = 46;
    this.buf[this.pos++] = PAIRS[cents]!;
    this.buf[this.pos++] = PAIRS[cents + 1]!;
  }

  /** `new Date(seconds * 1000).toISOString()` for whole seconds. */
  isoSeconds(seconds: number): void {
    if (!Number.isInteger(seconds) || seconds < 0 || seconds >= ISO_FAST_LIMIT) {
      this.text(new Date(seconds * 1000).toISOString());
      return;
    }
    const d = Math.floor(seconds / 86_400);
    if (d !== this.day) {
      this.day = d;
      this.dayText.write(new Date(d * 86_400_000).toISOString().slice(0, 11), 'latin1');
    }
    this.reserve(24);
    const buf = this.buf;
    let p = this.pos;
    const day = this.dayText;
    for (let k = 0; k < 11; k++) buf[p + k] = day[k]!;
    p += 11;
    const r = seconds - d * 86_400;
    const hours = (r / 3600) | 0;
    const minutes = ((r - hours * 3600) / 60) | 0;
    const h = hours * 2;
    const m = minutes * 2;
    const s = (r - hours * 3600 - minutes * 60) * 2;
    buf[p++] = PAIRS[h]!;
    buf[p++] = PAIRS[h + 1]!;
    buf[p++] = 58;
    buf[p++] = PAIRS[m]!;
    buf[p++] = PAIRS[m + 1]!;
    buf[p++] = 58;
    buf[p++] = PAIRS[s]!;
    buf[p++] = PAIRS[s + 1]!;
    buf[p++] = 46;
    buf[p++] = 48;
    buf[p++] = 48;
    buf[p++] = 48;
    buf[p++] = 90;
    this.pos = p;
  }
}
