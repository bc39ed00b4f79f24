import { z } from 'zod';
import type { Detection } from './detection.ts';

/**
 * fail2ban's ban decision as a pure function of detections: an address is reported once its
 * weighted attempts within `find_time_seconds` reach `max_retry`; then it stays quiet for one
 * window (de-duplication per address per window) and counting starts afresh. A detection brings
 * `attempts` × the weight of its kind (1 for a failed authentication; less for pre-auth
 * disconnects and scans, which are evidence, not failures). The confidence sent with a report is
 * documented beside `confidence` below and in plugins/source-sshd/README.md.
 */
export const PolicyOptions = z.strictObject({
  max_retry: z.number().int().min(1).max(10_000).default(5),
  find_time_seconds: z.number().int().min(1).max(7 * 86_400).default(600),
  /** Weight of each detection kind in 0..1 (how sure a line of that kind is an attack). */
  severity: z.record(z.string().max(64), z.number().min(0).max(1)).default({}),
  default_severity: z.number().min(0).max(1).default(0.6),
  /** How much one attempt of each kind counts toward `max_retry` (default 1; see DEFAULT_WEIGHT). */
  weight: z.record(z.string().max(64), z.number().min(0).max(100)).default({}),
  /** Addresses tracked at once; the least recently seen is forgotten first. */
  max_tracked: z.number().int().min(1).max(10_000_000).default(100_000),
});
export type PolicyOptions = z.infer<typeof PolicyOptions>;

/** What the agent turns into `POST /ips` (`{ip, confidence, source, notes}`). */
export interface ReportCandidate {
  ip: string;
  /** 0..1, two decimals. */
  confidence: number;
  source: string;
  notes: string;
  /** Time of the detection that completed the count (epoch seconds). */
  ts: number;
}

interface Seen {
  ts: number;
  attempts: number;
  kind: string;
}

interface AddressState {
  events: Seen[];
  /** Reports for this address are suppressed until then. */
  quietUntil: number;
  /**
   * Σ attempts × weight × ln(1 − severity) / max_retry over every attempt seen from the address
   * while it is tracked (quiet windows and earlier reports included): the confidence's evidence.
   */
  evidence: number;
}

/** Severities for the kinds the bundled sources emit; options override them. */
export const DEFAULT_SEVERITY: Readonly<Record<string, number>> = {
  invalid_user: 0.8,
  unknown_user: 0.7,
  root_refused: 0.8,
  refused_connect: 0.5,
  user_change: 0.7,
  user_not_allowed: 0.7,
  auth_failure: 0.6,
  too_many_failures: 0.8,
  login_after_failures: 0.5,
  preauth_disconnect: 0.3,
  auth_abandoned: 0.5,
  scan: 0.5,
  negotiation_failure: 0.4,
  port_scan: 0.7,
  blocked_packet: 0.3,
  modsec_block: 0.8,
  modsec_alert: 0.5,
  http_auth_failure: 0.6,
  rate_limited: 0.4,
  bot_search: 0.6,
  bad_request: 0.4,
  tls_probe: 0.3,
  cdn_block: 0.8,
  cdn_challenge: 0.5,
};

/**
 * Kinds that count otherwise than a failed authentication toward `max_retry`: a connection closed
 * before authenticating without naming a user, a client that never sent an SSH banner, a failed
 * algorithm negotiation weigh a quarter (four make one failure); a port scan (one attempt however
 * many ports it probed) weighs 5, so that one scan is reported at the default `max_retry`.
 */
export const DEFAULT_WEIGHT: Readonly<Record<string, number>> = {
  preauth_disconnect: 0.25,
  scan: 0.25,
  negotiation_failure: 0.25,
  port_scan: 5,
};

export class FailPolicy {
  private readonly options: PolicyOptions;
  private readonly addresses = new Map<string, AddressState>();

  constructor(options: Partial<z.input<typeof PolicyOptions>> = {}) {
    this.options = PolicyOptions.parse(options);
  }

  /** Feeds one detection; returns a report candidate when it completes a count. */
  push(detection: Detection): ReportCandidate | undefined {
    const { max_retry, find_time_seconds } = this.options;
    let state = this.addresses.get(detection.ip);
    if (state) this.addresses.delete(detection.ip);
    else state = { events: [], quietUntil: -Infinity, evidence: 0 };
    this.addresses.set(detection.ip, state);
    if (this.addresses.size > this.options.max_tracked) this.addresses.delete(this.addresses.keys().next().value!);

    // A detection of an attempt already counted (attempts 0) adds nothing.
    if (detection.attempts <= 0) return undefined;
    const weight = this.weight(detection.kind);
    state.evidence += (detection.attempts * weight * Math.log1p(-Math.min(this.severity(detection.kind), 0.999))) / max_retry;
    if (detection.ts < state.quietUntil) return undefined;
    const from = detection.ts - find_time_seconds;
    state.events = state.events.filter((e) => e.ts > from);
    state.events.push({ ts: detection.ts, attempts: detection.attempts, kind: detection.kind });
    const count = state.events.reduce((n, e) => n + e.attempts * this.weight(e.kind), 0);
    if (count < max_retry - 1e-9) return undefined;

    const candidate: ReportCandidate = {
      ip: detection.ip,
      confidence: confidence(state.evidence),
      source: detection.source,
      notes: notes(state.events, detection.source),
      ts: detection.ts,
    };
    state.events = [];
    state.quietUntil = detection.ts + find_time_seconds;
    return candidate;
  }

  /** Forgets addresses with nothing inside the window ending at `now` (call now and then). */
  prune(now: number): void {
    for (const [ip, state] of this.addresses) {
      const last = state.events.at(-1)?.ts ?? -Infinity;
      if (last <= now - this.options.find_time_seconds && state.quietUntil <= now) this.addresses.delete(ip);
    }
  }

  get tracked(): number {
    return this.addresses.size;
  }

  private severity(kind: string): number {
    return this.options.severity[kind] ?? DEFAULT_SEVERITY[kind] ?? this.options.default_severity;
  }

  private weight(kind: string): number {
    return this.options.weight[kind] ?? DEFAULT_WEIGHT[kind] ?? 1;
  }
}

/**
 * Each attempt is independent evidence: an attempt of a kind with severity s, weight w counts as
 * a chance w·(ln(1 − s))/max_retry in log space, so
 *
 *   confidence = 1 − Π over attempts (1 − s_kind)^(w_kind / max_retry)
 *
 * over every attempt seen from the address while it is tracked. At the threshold (max_retry
 * weighted attempts of one kind) it equals that kind's severity; every further attempt, in this
 * window or an earlier one, brings it closer to 1 (s is capped at 0.999); mixed kinds combine (3 invalid users and 2
 * failed passwords: 1 − 0.2^0.6 · 0.4^0.4 = 0.74). Two decimals, at least 0.01.
 */
function confidence(evidence: number): number {
  const value = 1 - Math.exp(evidence);
  return Math.min(1, Math.max(0.01, Math.round(value * 100) / 100));
}

function notes(events: Seen[], source: string): string {
  const kinds = new Map<string, number>();
  let count = 0;
  for (const e of events) {
    kinds.set(e.kind, (kinds.get(e.kind) ?? 0) + e.attempts);
    count += e.attempts;
  }
  const span = Math.round(events.at(-1)!.ts - events[0]!.ts);
  const list = [...kinds].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([k, n]) => `${k} x${n}`);
  return `${count} ${source} attempts in ${span}s: ${list.join(', ')}`;
}
