/*
 * Per-connection attempt accounting: one failed authentication attempt is one attempt, however
 * many lines sshd and PAM write for it. fail2ban's bookkeeping (connection-state.ts) decides
 * WHICH lines are detections; this ledger decides how many NEW attempts each of them adds.
 *
 * A connection is one sshd process (host, program and pid of the line) talking to one client
 * (address and port). Its lines say how many attempts it made through three independent
 * channels, and the connection made as many attempts as the most telling of them says:
 *   - `each`: sshd's own verdict on one attempt ("Failed password for …", a change of user name);
 *   - `pam`: PAM's verdict on one password attempt ("pam_unix(sshd:auth): authentication
 *     failure", "PAM: Authentication failure for …"), which sshd also logs as "Failed …";
 *   - `floor`: the connection made at least one attempt ("Invalid user", "not allowed because",
 *     "Too many authentication failures", a pre-auth disconnect or a scan in aggressive mode);
 *   - `more`: one attempt beyond all counted so far (a refused change of user name).
 * So "Invalid user x" + "Failed password for invalid user x" is one attempt; "Too many
 * authentication failures" or a disconnect after counted failures adds none.
 */

/** How a matched line counts toward its connection's attempts. */
export type AttemptCount = 'each' | 'pam' | 'floor' | 'more' | 'none';

class Connection {
  each = 0;
  pam = 0;
  floor = 0;
  /** Attempts already carried by detections of this connection. */
  reported = 0;
  constructor(
    public address: string | undefined,
    public port: number | undefined,
    public seenAt: number,
  ) {}

  get total(): number {
    return Math.max(this.each, this.pam, this.floor);
  }
}

/**
 * Connections keyed by `host program[pid]`, in least-recently-seen order; an entry is dropped
 * `maxAgeSeconds` after its last line (sshd's LoginGraceTime is 120 s by default) or when more
 * than `maxEntries` are open. A line whose address or port differs from the entry's is a new
 * connection that reuses the pid.
 */
export class AttemptLedger {
  private readonly connections = new Map<string, Connection>();

  constructor(
    private readonly maxEntries = 10_000,
    private readonly maxAgeSeconds = 600,
  ) {}

  /** Records one matched line of a connection. */
  record(key: string, address: string | undefined, port: number | undefined, counts: AttemptCount, now: number): void {
    let c = this.connections.get(key);
    if (c && (now - c.seenAt > this.maxAgeSeconds || differs(c.address, address) || differs(c.port, port))) c = undefined;
    this.connections.delete(key);
    if (c) {
      c.seenAt = now;
      c.address ??= address;
      c.port ??= port;
    } else c = new Connection(address, port, now);
    this.connections.set(key, c);
    if (counts === 'each') c.each++;
    else if (counts === 'pam') c.pam++;
    else if (counts === 'floor') c.floor = Math.max(c.floor, 1);
    else if (counts === 'more') c.floor = c.total + 1;
    this.evict(now);
  }

  /** Attempts of the connection not yet carried by a detection; marks them carried. */
  take(key: string): number {
    const c = this.connections.get(key);
    if (!c) return 0;
    const fresh = c.total - c.reported;
    c.reported = c.total;
    return fresh;
  }

  get size(): number {
    return this.connections.size;
  }

  private evict(now: number): void {
    for (const [key, c] of this.connections) {
      if (this.connections.size <= this.maxEntries && now - c.seenAt <= this.maxAgeSeconds) break;
      this.connections.delete(key);
    }
  }
}

function differs<T>(known: T | undefined, seen: T | undefined): boolean {
  return known !== undefined && seen !== undefined && known !== seen;
}
