/**
 * Failed authentications, counted per subject (a client address, an API key id) before any
 * authentication work is done for the next request: a subject that reaches its budget within
 * the window is locked out, and every further lock-out of the same subject doubles (capped) —
 * without it, each wrong secret costs a store read, a store write and a log line, unbounded.
 *
 * Per replica and in memory (docs/api.md, Rate limits): the budget a deployment sets is divided by
 * its replica count by the caller. Memory is bounded: at most `maxSubjects` are tracked and the
 * least recently failing is forgotten first.
 */
export interface AuthFailureLimits {
  /** Failures a subject may have within `windowMs` before it is locked out. */
  budget: number;
  /** First lock-out; each following one doubles, up to `maxLockMs`. */
  lockMs: number;
  maxLockMs: number;
  windowMs: number;
  maxSubjects: number;
}

interface Subject {
  failures: number;
  windowStart: number;
  lockedUntil: number;
  /** Lock-outs so far; forgotten after `maxLockMs` without a failure. */
  strikes: number;
  lastFailure: number;
}

export class AuthFailureGuard {
  private readonly subjects = new Map<string, Subject>();

  constructor(
    private readonly limits: AuthFailureLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Milliseconds the subject stays locked out (0: not locked). */
  lockedFor(subject: string): number {
    const s = this.subjects.get(subject);
    return s ? Math.max(0, s.lockedUntil - this.now()) : 0;
  }

  /** Counts one failure; answers the lock-out it started, in milliseconds (0: none). */
  fail(subject: string): number {
    const now = this.now();
    let s = this.subjects.get(subject);
    if (s && now - s.lastFailure > this.limits.maxLockMs + this.limits.windowMs) s = undefined;
    if (!s) s = { failures: 0, windowStart: now, lockedUntil: 0, strikes: 0, lastFailure: now };
    if (now - s.windowStart > this.limits.windowMs) {
      s.failures = 0;
      s.windowStart = now;
    }
    s.failures += 1;
    s.lastFailure = now;
    let started = 0;
    if (s.failures >= this.limits.budget) {
      started = Math.min(this.limits.maxLockMs, this.limits.lockMs * 2 ** s.strikes);
      s.strikes += 1;
      s.failures = 0;
      s.windowStart = now;
      s.lockedUntil = now + started;
    }
    // Re-inserted so the map's order is least recently failing first.
    this.subjects.delete(subject);
    this.subjects.set(subject, s);
    while (this.subjects.size > this.limits.maxSubjects) this.subjects.delete(this.subjects.keys().next().value!);
    return started;
  }

  /** Tracked subjects (for tests and metrics). */
  get size(): number {
    return this.subjects.size;
  }
}

/**
 * Failed authentications with key ids nobody has (unknown_key) across addresses: a budget per
 * minute for the whole replica and one per network (/24 of IPv4, /48 of IPv6), so that guessing
 * key ids from many addresses (each under its own budget) is limited too. Fixed windows of
 * `windowMs`; memory bounded by `maxNetworks` (the oldest network is forgotten first).
 */
export interface UnknownKeyLimits {
  perWindow: number;
  perNetworkPerWindow: number;
  windowMs: number;
  maxNetworks: number;
}

export class UnknownKeyBudget {
  private windowStart = Number.NEGATIVE_INFINITY;
  private total = 0;
  private readonly networks = new Map<string, number>();

  constructor(
    private readonly limits: UnknownKeyLimits,
    private readonly now: () => number = Date.now,
  ) {}

  private roll(now: number): void {
    if (now - this.windowStart < this.limits.windowMs) return;
    this.windowStart = now;
    this.total = 0;
    this.networks.clear();
  }

  /** Which budget `network` has spent ('all' or 'network') and the milliseconds until it is renewed; null when neither is. */
  spent(network: string): { subject: 'all' | 'network'; ms: number } | null {
    const now = this.now();
    this.roll(now);
    const ms = this.windowStart + this.limits.windowMs - now;
    if (this.total >= this.limits.perWindow) return { subject: 'all', ms };
    if ((this.networks.get(network) ?? 0) >= this.limits.perNetworkPerWindow) return { subject: 'network', ms };
    return null;
  }

  /** Counts one failure of an unknown key id from `network`. */
  fail(network: string): void {
    this.roll(this.now());
    this.total += 1;
    const n = (this.networks.get(network) ?? 0) + 1;
    this.networks.delete(network);
    this.networks.set(network, n);
    while (this.networks.size > this.limits.maxNetworks) this.networks.delete(this.networks.keys().next().value!);
  }
}

/**
 * Key ids the replica has seen fail as unknown, for `ttlMs`: a request naming one again is
 * refused without a store look-up. Bounded: at most `max` ids, the oldest forgotten first.
 */
export class UnknownKeyIds {
  private readonly ids = new Map<string, number>();

  constructor(
    private readonly ttlMs: number,
    private readonly max: number,
    private readonly now: () => number = Date.now,
  ) {}

  has(keyId: string): boolean {
    const until = this.ids.get(keyId);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.ids.delete(keyId);
    return false;
  }

  add(keyId: string): void {
    this.ids.delete(keyId);
    this.ids.set(keyId, this.now() + this.ttlMs);
    while (this.ids.size > this.max) this.ids.delete(this.ids.keys().next().value!);
  }

  get size(): number {
    return this.ids.size;
  }
}

/** The network an address is counted in for unknown key ids: its /24 (IPv4, also IPv4-mapped IPv6) or /48 (IPv6). */
export function networkOf(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1] ?? ip;
  const v4 = /^(\d+)\.(\d+)\.(\d+)\.\d+$/.exec(mapped);
  if (v4) return `${v4[1]}.${v4[2]}.${v4[3]}.0/24`;
  const [head = ''] = mapped.split('::', 1);
  const groups = mapped.includes('::') ? [...head.split(':').filter(Boolean), '0', '0', '0'] : mapped.split(':');
  return `${groups
    .slice(0, 3)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/48`;
}
