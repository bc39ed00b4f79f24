/**
 * Failed authentications, counted per subject (a client address, an API key id) before any
 * authentication work is done for the next request: a subject that reaches its budget within
 * the window is locked out, and every further lock-out of the same subject doubles (capped) —
 * without it, each wrong secret costs a store read, a store write and a log line, unbounded.
 *
 * Per replica and in memory (README, Rate limits): the budget a deployment sets is divided by
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
