/** How eagerly a source counts a line as an attack (fail2ban's `mode`). */
export type DetectionMode = 'normal' | 'aggressive';

/** One attack seen by a source: the unit the agent aggregates and reports. */
export interface Detection {
  /** Epoch seconds of the log line (the line's own timestamp; the read time when it has none). */
  ts: number;
  /** The attacker: IPv4 or IPv6 address as written in the line, normalised (no port, no brackets). */
  ip: string;
  /** The spec label of the source (`ssh_log`, `waf_log`, `packet_filter`, ...). */
  source: string;
  /** What the line shows, e.g. `invalid_user`, `auth_failure`, `modsec_block`, `port_scan`. */
  kind: string;
  /** New attempts this detection adds (0 for a line of an attempt already counted). */
  attempts: number;
  /**
   * Set on an attempt that the source's reference filter (fail2ban's) does not flag but the
   * policy counts, e.g. an sshd key probe closed before authentication in normal mode: the agent
   * counts it toward a report; `rampart-agent parse` prints it only with `--reports`.
   */
  policyOnly?: true;
}
