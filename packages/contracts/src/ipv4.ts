/*
 * The one IPv4 grammar of Rampart: server, agent, console and every plugin decide "is this an
 * IPv4 address or network" here, so an entry is either enforced everywhere or nowhere.
 *
 * Grammar (strict): four decimal octets 0-255 without leading zeros (`010.0.0.1` is octal to
 * inet_aton and decimal to others, so it is refused), optionally `/n` with n 0-32, again
 * without leading zeros (`/08` is refused). Nothing around it: no blanks, no CR, no brackets.
 * Host bits under the prefix are allowed on input and cleared (`198.51.100.9/24` is the
 * network `198.51.100.0/24`).
 *
 * Key: network address * 64 + prefix length. Exact in a double, unique per network, and its
 * numeric order is the list order (address, then prefix). Parsing to a key allocates nothing:
 * enforcers parse 100,000 entries per full sync and the agent holds a million keys.
 */

/** An IPv4 network as unsigned 32-bit numbers: first address, last address, prefix length. */
export interface Ipv4Net {
  start: number;
  end: number;
  prefix: number;
}

function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * Reads a decimal number without leading zeros of at most `maxDigits` digits starting at `at`;
 * returns the value * 4 + digit count (so one number carries both), or -1 when there is none.
 */
function readDecimal(text: string, at: number, maxDigits: number): number {
  let value = 0;
  let i = at;
  while (i < text.length && i - at < maxDigits + 1 && isDigit(text.charCodeAt(i))) {
    value = value * 10 + (text.charCodeAt(i) - 48);
    i += 1;
  }
  const digits = i - at;
  if (digits === 0 || digits > maxDigits || (digits > 1 && text.charCodeAt(at) === 48)) return -1;
  return value * 4 + digits;
}

/**
 * Set by every `ipv4Key` call: whether the text was already canonical (explicit prefix, no host
 * bits), so `canonicalIpv4Cidr` can hand the caller's string back without building one to compare.
 * The grammar refuses leading zeros, so the decimal spelling of a key is unique.
 */
let lastWasCanonical = false;

/** The key (network * 64 + prefix) of strict IPv4 text, or -1 when the text is not IPv4. */
export function ipv4Key(text: string): number {
  lastWasCanonical = false;
  let value = 0;
  let i = 0;
  for (let octet = 0; octet < 4; octet += 1) {
    const read = readDecimal(text, i, 3);
    if (read < 0) return -1;
    const part = read >> 2;
    if (part > 255) return -1;
    value = value * 256 + part;
    i += read & 3;
    if (octet < 3) {
      if (text.charCodeAt(i) !== 46) return -1;
      i += 1;
    }
  }
  let prefix = 32;
  if (i < text.length) {
    if (text.charCodeAt(i) !== 47) return -1;
    const read = readDecimal(text, i + 1, 2);
    if (read < 0) return -1;
    prefix = read >> 2;
    i += 1 + (read & 3);
    if (prefix > 32 || i !== text.length) return -1;
    const network = (value & maskOf(prefix)) >>> 0;
    lastWasCanonical = network === value;
    return network * 64 + prefix;
  }
  return value * 64 + 32;
}

/** A strict IPv4 address or network as a range; undefined when the text is not IPv4. */
export function parseIpv4(text: string): Ipv4Net | undefined {
  const key = ipv4Key(text);
  return key < 0 ? undefined : ipv4KeyNet(key);
}

/** A strict single address (no prefix) as an unsigned 32-bit number; undefined otherwise. */
export function parseIpv4Address(text: string): number | undefined {
  if (text.indexOf('/') !== -1) return undefined;
  const key = ipv4Key(text);
  return key < 0 ? undefined : (key - 32) / 64;
}

/** True for a strict single address (`a.b.c.d`, no prefix). */
export function isIpv4Address(text: string): boolean {
  return text.indexOf('/') === -1 && ipv4Key(text) >= 0;
}

/** True for a strict address or network (`a.b.c.d` or `a.b.c.d/n`). */
export function isIpv4(text: string): boolean {
  return ipv4Key(text) >= 0;
}

/** The range a key stands for. */
export function ipv4KeyNet(key: number): Ipv4Net {
  const prefix = key % 64;
  const start = (key - prefix) / 64;
  return { start, end: (start | (~maskOf(prefix) >>> 0)) >>> 0, prefix };
}

/** The key of a network given by its first address and prefix. */
export function ipv4NetKey(net: Pick<Ipv4Net, 'start' | 'prefix'>): number {
  return net.start * 64 + net.prefix;
}

/** Dotted decimal of an unsigned 32-bit address. */
export function formatIpv4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
}

function pushDecimal(codes: number[], value: number): void {
  if (value >= 100) codes.push(48 + Math.floor(value / 100));
  if (value >= 10) codes.push(48 + (Math.floor(value / 10) % 10));
  codes.push(48 + (value % 10));
}

/**
 * Canonical CIDR of a key (`203.0.113.7/32`). Built from character codes so V8 makes one flat
 * string (a template literal makes a tree of pieces, ~3x the memory, and the agent's block
 * list holds a million of these).
 */
export function ipv4KeyCidr(key: number): string {
  const prefix = key % 64;
  const ip = (key - prefix) / 64;
  const codes: number[] = [];
  pushDecimal(codes, ip >>> 24);
  codes.push(46);
  pushDecimal(codes, (ip >>> 16) & 255);
  codes.push(46);
  pushDecimal(codes, (ip >>> 8) & 255);
  codes.push(46);
  pushDecimal(codes, ip & 255);
  codes.push(47);
  pushDecimal(codes, prefix);
  return String.fromCharCode(...codes);
}

/** Canonical CIDR (`network/len`, host bits cleared) of strict IPv4 text; undefined when not IPv4. */
export function canonicalIpv4Cidr(text: string): string | undefined {
  return canonicalIpv4CidrKey(text, scratchKey);
}

const scratchKey = { key: 0 };

/** `canonicalIpv4Cidr`, also giving the value's `ipv4Key` in `out.key`, from one parse. */
export function canonicalIpv4CidrKey(text: string, out: { key: number }): string | undefined {
  const key = ipv4Key(text);
  if (key < 0) return undefined;
  out.key = key;
  // Hand back the caller's string when it is already canonical: a 100k-entry sync then keeps
  // one string per entry, maps reuse the hash it already carries, and nothing is built.
  return lastWasCanonical ? text : ipv4KeyCidr(key);
}

/** The form most list files use: a bare address for a /32, the CIDR otherwise. */
export function ipv4ListForm(cidr: string): string {
  return cidr.endsWith('/32') ? cidr.slice(0, -3) : cidr;
}

/**
 * List order (address, then prefix) for strict IPv4 text; text that is not IPv4 sorts after
 * every network, by text, so a comparison never throws.
 */
export function compareIpv4(a: string, b: string): number {
  const x = ipv4Key(a);
  const y = ipv4Key(b);
  if (x >= 0 && y >= 0) return x - y;
  if (x >= 0) return -1;
  if (y >= 0) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
