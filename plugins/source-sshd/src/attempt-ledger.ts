/*
 * Per-connection attempt accounting: one failed authentication attempt is one attempt, however
 * many lines sshd and PAM write for it. fail2ban's bookkeeping (connection-state.ts) decides
 * WHICH lines are detections; these counts decide how many NEW attempts each of them adds.
 *
 * A connection is one sshd process (host, program and pid of the line) talking to one client
 * (address and port). Its lines say how many attempts it made through independent channels,
 * and the connection made as many attempts as the most telling of them says:
 *   - `each`: sshd's own verdict on one attempt ("Failed password for …");
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

/**
 * The attempts of one connection. It lives on the connection's entry in the ConnectionCache
 * (which bounds and expires them) and outlives fail2ban's "forget" of the connection, so that a
 * disconnect line after the forget does not count the connection again.
 */
export class AttemptCounts {
  private each = 0;
  private pam = 0;
  private floor = 0;
  /** Attempts already carried by detections of this connection. */
  private reported = 0;
  private address: string | undefined = undefined;
  private port: number | undefined = undefined;
  /** fail2ban forgot the connection; a later line may be another connection that reuses the pid. */
  closed = false;

  /** Whether the next line's port matters: the first one, or one after the connection closed. */
  get wantsPort(): boolean {
    return this.port === undefined || this.closed;
  }

  /** Whether the connection counted anything (else there is nothing to keep when it closes). */
  get counted(): boolean {
    return this.each + this.pam + this.floor > 0;
  }

  /** Records one matched line; a line from another address or port is a new connection (pid reused). */
  record(address: string | undefined, port: number | undefined, counts: AttemptCount): void {
    if (differs(this.address, address) || differs(this.port, port)) {
      this.each = this.pam = this.floor = this.reported = 0;
      this.address = this.port = undefined;
    }
    this.address ??= address;
    this.port ??= port;
    this.closed = false;
    if (counts === 'each') this.each++;
    else if (counts === 'pam') this.pam++;
    else if (counts === 'floor') this.floor = Math.max(this.floor, 1);
    else if (counts === 'more') this.floor = this.total + 1;
  }

  /** Attempts not yet carried by a detection; marks them carried. */
  take(): number {
    const total = this.total;
    const fresh = total - this.reported;
    this.reported = total;
    return fresh;
  }

  private get total(): number {
    return Math.max(this.each, this.pam, this.floor);
  }
}

function differs<T>(known: T | undefined, seen: T | undefined): boolean {
  return known !== undefined && seen !== undefined && known !== seen;
}
