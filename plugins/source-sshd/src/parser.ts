import { canonicalIp, EnvelopeParser, JournalExportAssembler } from '@rampart/plugin-kit';
import type { Detection, DetectionMode, Envelope, LineParser } from '@rampart/plugin-kit';
import { ConnectionCache, mergeLine } from './connection-state.ts';
import type { ConnectionFacts } from './connection-state.ts';
import type { LineMatch } from './connection-state.ts';
import { indexRules, sshRules } from './rules.ts';
import type { SshRule } from './rules.ts';

export interface SshParserOptions {
  mode: DetectionMode;
  /** Program names whose lines are read (`sshd`, and `sshd-session` since OpenSSH 9.8). */
  programs?: readonly string[];
}

/** Why lines were read but gave no detection, for the `parse` summary. */
export interface SshParserStats {
  lines: number;
  sshLines: number;
  detections: number;
  /** Failures whose host was a name, not an address: never resolved (attackers control DNS). */
  hostNames: number;
  /** Messages longer than sshd ever writes, skipped. */
  overlong: number;
  /** Key probes counted for the policy only (normal mode; `Detection.policyOnly`). */
  keyProbes: number;
}

// fail2ban's __pref: sshd's own severity prefixes.
const PREFIX_RE = /^(?:error|fatal): (?:PAM: )?/;
// sshd formats a message into 1024 bytes (log.c MSGBUFSIZ): anything longer is not sshd's, and
// the cap bounds the (polynomial) backtracking of the user-name patterns on crafted text.
const MAX_MESSAGE = 1200;
const PREAUTH_END_RE = /\s\[preauth\]\s*$/;

/** What most lines give; frozen, since it is shared. */
const NONE: Detection[] = Object.freeze([]) as unknown as Detection[];

/** The `ssh_log` line parser: fail2ban's sshd filter semantics, one rule list per mode. */
export class SshParser implements LineParser {
  readonly counters: SshParserStats = { lines: 0, sshLines: 0, detections: 0, hostNames: 0, overlong: 0, keyProbes: 0 };
  private readonly index: Map<number, SshRule[]>;
  private readonly programs: Set<string>;
  private readonly envelopes = new EnvelopeParser();
  private readonly journalExport = new JournalExportAssembler();
  private readonly connections = new ConnectionCache();
  private readonly lastConnection = { host: '', program: '', pid: '', key: ' []' };

  constructor(options: SshParserOptions) {
    this.index = indexRules(sshRules(options.mode));
    this.programs = new Set(options.programs ?? ['sshd', 'sshd-session']);
  }

  stats(): Record<string, number> {
    return { ...this.counters };
  }

  push(line: string, readAt: number): Detection[] {
    this.counters.lines++;
    const exported = this.journalExport.push(line);
    if (exported === null) return NONE;
    const envelope = exported ?? this.envelopes.parse(line, readAt);
    return envelope ? this.envelope(envelope, readAt) : NONE;
  }

  flush(now: number): Detection[] {
    const envelope = this.journalExport.end();
    return envelope ? this.envelope(envelope, now) : NONE;
  }

  private envelope(envelope: Envelope, readAt: number): Detection[] {
    if (!this.programs.has(envelope.program)) return NONE;
    this.counters.sshLines++;
    let message = envelope.message;
    if (message.length > MAX_MESSAGE) {
      this.counters.overlong++;
      return NONE;
    }
    const c = message.charCodeAt(0);
    if (c === 101 /* e */ || c === 102 /* f */) message = message.replace(PREFIX_RE, '');
    const candidates = this.index.get(message.charCodeAt(0));
    if (!candidates) return NONE;
    const ts = Number.isFinite(envelope.ts) ? envelope.ts : readAt;
    for (const rule of candidates) {
      if (!startsWithAny(message, rule.leads)) continue;
      const m = rule.re.exec(message);
      if (!m) continue;
      return this.matched(rule, m, this.connectionOf(envelope), ts, message);
    }
    return NONE;
  }

  /**
   * `host program[pid]`, the key of the line's connection. Consecutive lines are often of one
   * connection: its key is then the same string, whose hash the cache's Map has already computed.
   */
  private connectionOf(envelope: Envelope): string {
    const last = this.lastConnection;
    if (envelope.pid === last.pid && envelope.program === last.program && envelope.host === last.host) return last.key;
    last.host = envelope.host;
    last.program = envelope.program;
    last.pid = envelope.pid;
    last.key = `${envelope.host} ${envelope.program}[${envelope.pid}]`;
    return last.key;
  }

  private matched(rule: SshRule, m: RegExpExecArray, connection: string, ts: number, message: string): Detection[] {
    const { at } = rule;
    // Index 0 (a name the rule lacks) is the whole match: read only where the rule has the name.
    const user = at.user ? m[at.user] : undefined;
    const match: LineMatch = {
      ip4: at.ip4 ? m[at.ip4] : undefined,
      ip6: at.ip6 ? m[at.ip6] : undefined,
      dns: at.dns ? m[at.dns] : undefined,
      // fail2ban's <F-ALT_USER>: the remote user stands in when no user is logged.
      user: user || (at.ruser ? m[at.ruser] : undefined) || undefined,
      nofail: rule.nofail === true || (at.nf !== 0 && m[at.nf] !== undefined),
      forget: rule.forget === true,
      gained: rule.gained === true,
    };
    const facts = mergeLine(this.connections, connection, match, ts);
    const attempts = facts.attempts;
    if (rule.counts !== 'none') {
      const address = match.ip4 ?? match.ip6 ?? match.dns;
      attempts.record(address, address !== undefined && attempts.wantsPort ? portOf(message) : undefined, rule.counts);
    }
    // A line after fail2ban's forget (the pre-auth disconnect after 'Received disconnect') may
    // still count an attempt (a detection in aggressive mode, a key probe in both): the closed
    // connection's counts stay known so that it adds none of those already counted.
    if (match.forget && attempts.counted) this.connections.close(connection, attempts, ts);
    if (!match.nofail && !match.gained) facts.failureKind = rule.kind;
    if (facts.nofail) return rule.kind === 'preauth_disconnect' && user !== undefined ? this.keyProbe(facts, ts, message) : NONE;
    const host = facts.ip4 ?? facts.ip6 ?? facts.dns;
    if (host === undefined) {
      facts.pending = true;
      return NONE;
    }
    const ip = canonicalIp(host);
    if (ip === undefined) {
      this.counters.hostNames++;
      return NONE;
    }
    this.counters.detections++;
    // A helper line that completes a pending failure (the address arrives after the failure)
    // reports that failure's kind.
    let kind = match.nofail ? (facts.failureKind ?? rule.kind) : rule.kind;
    // A pre-auth close that names the user asked to authenticate and left without success: at
    // sshd's default LogLevel its rejected keys are not logged, so this is their only trace.
    if (kind === 'preauth_disconnect' && user !== undefined) kind = 'auth_abandoned';
    // The same lines as fail2ban's detections, but each carries only the attempts it adds: a
    // line of an attempt already counted (the "Failed password" after "Invalid user") adds 0.
    return [{ ts, ip, source: 'ssh_log', kind, attempts: attempts.take() }];
  }

  /**
   * Normal mode: "Connection closed by authenticating user root … [preauth]" is no failure for
   * fail2ban (a helper line), but alone on its connection it is a client that offered keys for
   * a user and left (at sshd's default LogLevel its rejected keys are not logged). It counts one
   * attempt for the policy, as `auth_abandoned` does in aggressive mode, without becoming one of
   * fail2ban's detection lines (`policyOnly`). After counted failures it adds nothing.
   */
  private keyProbe(facts: ConnectionFacts, ts: number, message: string): Detection[] {
    if (!PREAUTH_END_RE.test(message)) return NONE;
    const fresh = facts.attempts.take();
    const host = facts.ip4 ?? facts.ip6;
    const ip = fresh > 0 && host !== undefined ? canonicalIp(host) : undefined;
    if (ip === undefined) return NONE;
    this.counters.keyProbes++;
    return [{ ts, ip, source: 'ssh_log', kind: 'auth_abandoned', attempts: fresh, policyOnly: true }];
  }
}

function startsWithAny(message: string, leads: readonly string[]): boolean {
  for (let i = 0; i < leads.length; i++) if (message.startsWith(leads[i]!)) return true;
  return false;
}

/** The client's port: sshd writes it after the address (a user name before it may mimic one). */
function portOf(message: string): number | undefined {
  const at = message.lastIndexOf(' port ');
  if (at === -1) return undefined;
  let port = 0;
  let i = at + 6;
  for (let c = message.charCodeAt(i); c >= 48 && c <= 57 && i < at + 11; c = message.charCodeAt(++i)) port = port * 10 + c - 48;
  return i === at + 6 ? undefined : port;
}
