/*
 * fail2ban's multi-line bookkeeping per connection (its `mlfid` cache and `_mergeFailure`),
 * ported so that the same lines count as failures: helper lines remember the address of a
 * connection, a failure logged without an address takes it from there (or waits for it), a
 * successful login forgives earlier helper lines unless several user names were tried.
 */

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
  users: Set<string> | undefined = undefined;
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

  constructor(match: LineMatch, nofail: boolean, seenAt: number) {
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

/** A bounded LRU of connections keyed by host + program + pid, entries expire after `maxAgeSeconds`. */
export class ConnectionCache {
  private readonly entries = new Map<string, ConnectionFacts>();
  constructor(
    private readonly maxEntries = 10_000,
    private readonly maxAgeSeconds = 600,
  ) {}

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
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

function addUser(facts: ConnectionFacts, user: string | undefined): Set<string> | undefined {
  if (!user) return facts.users;
  facts.users ??= new Set();
  facts.users.add(user);
  return facts.users;
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
  let users: Set<string> | undefined;
  const cached = cache.get(key, now);
  if (cached) {
    users = addUser(cached, match.user);
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
    facts = new ConnectionFacts(match, nofail, now);
    if (!(flags & FORGET)) {
      users = addUser(facts, match.user);
      cache.set(key, facts);
    }
  }
  // Pending failures, or several user names tried on one connection, turn helpers into failures.
  if (facts.pending || (users && users.size > 1)) {
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
