/*
 * fail2ban's multi-line bookkeeping per connection (its `mlfid` cache and `_mergeFailure`),
 * ported so that the same lines count as failures: helper lines remember the address of a
 * connection, a failure logged without an address takes it from there (or waits for it), a
 * successful login forgives earlier helper lines unless several user names were tried.
 * Each entry also carries the connection's attempt counts (attempt-ledger.ts); when fail2ban
 * forgets a connection that counted attempts, the parser (in aggressive mode, where a pre-auth
 * disconnect is a detection) moves its counts to a small table of recently closed connections
 * (`close`), so that the lines after the forget (sshd writes "Received disconnect" and then
 * "Disconnected from") do not count its attempts again.
 */
import { AttemptCounts } from './attempt-ledger.ts';

/** What one matched line says (fail2ban's group dict of a failregex match). */
export interface LineMatch {
  ip4: string | undefined;
  ip6: string | undefined;
  dns: string | undefined;
  user: string | undefined;
  nofail: boolean;
  forget: boolean;
  gained: boolean;
}

/** What fail2ban keeps for a connection (the merged group dict). A class: one hidden shape. */
export class ConnectionFacts {
  ip4: string | undefined;
  ip6: string | undefined;
  dns: string | undefined;
  /** The first user name the connection logged, and whether another one followed. */
  user: string | undefined = undefined;
  manyUsers = false;
  nofail: boolean;
  gained: boolean;
  pending = false;
  /** Lines that make up the failure so far (fail2ban's `matches`). */
  matches = 0;
  /** Helper lines held back while the connection may still succeed (`nofail-matches`). */
  nofailMatches = 0;
  /** Kind of the last failure line, for a failure completed later by a helper line. */
  failureKind: string | undefined = undefined;
  seenAt: number;
  attempts: AttemptCounts;

  constructor(match: LineMatch, nofail: boolean, seenAt: number, attempts: AttemptCounts | undefined) {
    this.attempts = attempts ?? new AttemptCounts();
    this.ip4 = match.ip4;
    this.ip6 = match.ip6;
    this.dns = match.dns;
    this.nofail = nofail;
    this.gained = match.gained;
    this.seenAt = seenAt;
  }
}

const NOFAIL = 1;
const FORGET = 2;
const HAD_NOFAIL = 4;
const GAINED = 8;

/**
 * A bounded table of connections keyed by host + program + pid; entries expire `maxAgeSeconds`
 * after their last line. Expired entries, and beyond `maxEntries` the oldest, are swept in one
 * pass every 1,024 insertions (or when full) rather than one per insertion: a JavaScript Map
 * used as a queue skips every deleted slot at its front on each `keys().next()`.
 */
export class ConnectionCache {
  private readonly entries = new Map<string, ConnectionFacts>();
  /** Attempt counts of connections fail2ban forgot, newest last; at most `maxClosed`. */
  private readonly closed = new Map<string, { attempts: AttemptCounts; at: number }>();
  private insertions = 0;
  constructor(
    private readonly maxEntries = 10_000,
    private readonly maxAgeSeconds = 600,
    private readonly maxClosed = 1_000,
  ) {}

  delete(key: string): void {
    this.entries.delete(key);
  }

  /** Keeps the counts of a connection fail2ban forgot, for the lines that follow. */
  close(key: string, attempts: AttemptCounts, now: number): void {
    attempts.closed = true;
    const known = this.closed.get(key);
    if (known?.attempts === attempts) {
      known.at = now; // the second goodbye of the same connection
      return;
    }
    if (known) this.closed.delete(key);
    this.closed.set(key, { attempts, at: now });
    if (this.closed.size > this.maxClosed) {
      let drop = Math.ceil(this.maxClosed / 10);
      for (const old of this.closed.keys()) {
        if (drop-- <= 0) break;
        this.closed.delete(old);
      }
    }
  }

  /** The counts of a recently closed connection of this key (a new one has none). */
  closedAttempts(key: string, now: number): AttemptCounts | undefined {
    if (this.closed.size === 0) return undefined;
    const entry = this.closed.get(key);
    if (entry === undefined) return undefined;
    if (now - entry.at > this.maxAgeSeconds) {
      this.closed.delete(key);
      return undefined;
    }
    return entry.attempts;
  }

  get(key: string, now: number): ConnectionFacts | undefined {
    const facts = this.entries.get(key);
    if (facts && now - facts.seenAt > this.maxAgeSeconds) {
      this.entries.delete(key);
      return undefined;
    }
    return facts;
  }

  set(key: string, facts: ConnectionFacts): void {
    this.entries.delete(key);
    this.entries.set(key, facts);
    if (this.entries.size > this.maxEntries || ++this.insertions >= 1024) this.sweep(facts.seenAt);
  }

  /** One pass from the oldest: drops expired entries, and the oldest down to 90% of the bound. */
  private sweep(now: number): void {
    this.insertions = 0;
    const keep = Math.floor(this.maxEntries * 0.9);
    for (const [key, facts] of this.entries) {
      if (this.entries.size <= keep && now - facts.seenAt <= this.maxAgeSeconds) break;
      this.entries.delete(key);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}

function addUser(facts: ConnectionFacts, user: string | undefined): void {
  if (!user) return;
  if (facts.user === undefined) facts.user = user;
  else if (facts.user !== user) facts.manyUsers = true;
}

/**
 * Merges one matched line into its connection and returns the merged facts; the caller reports a
 * failure when `nofail` is false and an address is known (else it marks the failure pending).
 */
export function mergeLine(cache: ConnectionCache, key: string, match: LineMatch, now: number): ConnectionFacts {
  let flags = 0;
  let nofail = match.nofail;
  if (match.gained) {
    flags |= GAINED | NOFAIL;
    nofail = true;
  } else if (nofail) flags |= NOFAIL;
  if (match.forget) flags |= FORGET;

  let facts: ConnectionFacts;
  const cached = cache.get(key, now);
  if (cached) {
    addUser(cached, match.user);
    if (cached.nofail) flags |= HAD_NOFAIL;
    if (cached.gained) flags |= HAD_NOFAIL;
    cached.nofail = false;
    cached.gained = false;
    if (flags & GAINED) cached.pending = false;
    if ((flags & HAD_NOFAIL) === 0 && !cached.pending) cached.matches = 0;
    if (match.ip4 !== undefined) cached.ip4 = match.ip4;
    if (match.ip6 !== undefined) cached.ip6 = match.ip6;
    if (match.dns !== undefined) cached.dns = match.dns;
    if (nofail) cached.nofail = true;
    if (match.gained) cached.gained = true;
    cached.seenAt = now;
    facts = cached;
    if (flags & FORGET) cache.delete(key);
  } else {
    facts = new ConnectionFacts(match, nofail, now, cache.closedAttempts(key, now));
    if (!(flags & FORGET)) {
      addUser(facts, match.user);
      cache.set(key, facts);
    }
  }
  // Pending failures, or several user names tried on one connection, turn helpers into failures.
  if (facts.pending || facts.manyUsers) {
    facts.pending = false;
    facts.nofail = false;
    facts.gained = false;
    flags &= ~(GAINED | NOFAIL);
  }
  if ((flags & NOFAIL) === 0) {
    let m = facts.nofailMatches + facts.matches;
    facts.nofailMatches = 0;
    if ((flags & GAINED) === 0) m += 1;
    facts.matches = m;
  } else if ((flags & (NOFAIL | FORGET)) === NOFAIL) {
    facts.nofailMatches += 1;
  }
  return facts;
}
