import type { Writable } from 'node:stream';
import type { Detection } from '@rampart/plugin-kit';

const OUT_BATCH = 64 * 1024;

const bytes = (s: string) => Uint8Array.from(Buffer.from(s, 'latin1'));
const TS = bytes('{"ts":');
const IP = bytes(',"ip":"');
const SOURCE = bytes('","source":');
const KIND = bytes(',"kind":');
const ATTEMPTS = bytes(',"attempts":');
const END = bytes('}\n');
/** The fixed parts of a detection line and the widest numbers (ts and attempts). */
const FIXED = TS.length + IP.length + SOURCE.length + KIND.length + ATTEMPTS.length + END.length + 2 * 24;

/**
 * `parse`'s standard output: lines gathered in one buffer, written in batches of at least 64 KiB.
 * A string grown by `+=` until then would outlive the young generation (copied, then promoted) on
 * every scavenge; a detection line is written into the buffer piece by piece, the same bytes as
 * `{"ts":${ts},"ip":"${ip}","source":${JSON.stringify(source)},"kind":${JSON.stringify(kind)},"attempts":${attempts}}\n`
 * without building that string.
 */
export class Output {
  private buf = Buffer.allocUnsafe(OUT_BATCH * 2);
  private used = 0;
  /** JSON of the sources' and kinds' names (a handful), as UTF-8. */
  private readonly quoted = new Map<string, Uint8Array>();

  constructor(private readonly stdout: Writable) {}

  /** Makes room for `n` more bytes. */
  private room(n: number): void {
    if (this.used + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + n));
    this.buf.copy(bigger, 0, 0, this.used);
    this.buf = bigger;
  }

  line(text: string): void {
    // At most 3 bytes of UTF-8 per UTF-16 unit.
    this.room(text.length * 3);
    this.used += this.buf.write(text, this.used, 'utf8');
  }

  detection(d: Detection): void {
    const source = this.json(d.source);
    const kind = this.json(d.kind);
    this.room(FIXED + source.length + kind.length + d.ip.length * 3);
    this.put(TS);
    this.number(d.ts);
    this.put(IP);
    this.text(d.ip);
    this.put(SOURCE);
    this.put(source);
    this.put(KIND);
    this.put(kind);
    this.put(ATTEMPTS);
    this.number(d.attempts);
    this.put(END);
  }

  async flush(force: boolean): Promise<void> {
    if (this.used === 0 || (!force && this.used < OUT_BATCH)) return;
    // The stream may keep the chunk until written: it is handed over, a new buffer takes its place.
    const chunk = this.buf.subarray(0, this.used);
    this.buf = Buffer.allocUnsafe(this.buf.length);
    this.used = 0;
    if (!this.stdout.write(chunk)) await new Promise<void>((resolve) => this.stdout.once('drain', resolve));
  }

  private json(name: string): Uint8Array {
    let q = this.quoted.get(name);
    if (q === undefined) this.quoted.set(name, (q = Uint8Array.from(Buffer.from(JSON.stringify(name), 'utf8'))));
    return q;
  }

  private put(piece: Uint8Array): void {
    const buf = this.buf;
    let at = this.used;
    for (let i = 0; i < piece.length; i++) buf[at++] = piece[i]!;
    this.used = at;
  }

  /** As `${n}` writes it: integers digit by digit, anything else through String(). */
  private number(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) {
      this.text(String(n));
      return;
    }
    const buf = this.buf;
    let digits = 1;
    for (let t = n; t >= 10; t = Math.floor(t / 10)) digits++;
    let at = this.used + digits;
    this.used = at;
    let t = n;
    do {
      const q = Math.floor(t / 10);
      buf[--at] = 48 + (t - q * 10);
      t = q;
    } while (t > 0);
  }

  /** A string as UTF-8; byte by byte while it is ASCII. */
  private text(s: string): void {
    const buf = this.buf;
    const start = this.used;
    let at = start;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c > 127) {
        this.used = start + buf.write(s, start, 'utf8');
        return;
      }
      buf[at++] = c;
    }
    this.used = at;
  }
}
