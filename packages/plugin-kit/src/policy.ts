import { z } from 'zod';
import type { Detection } from './source.ts';

/**
 * fail2ban's ban decision as a pure function of detections: an address is reported once its
 * attempts within `find_time_seconds` reach `max_retry`; then it stays quiet for one window
 * (de-duplication per address per window) and counting starts afresh.
 */
export const PolicyOptions = z.strictObject({
  max_retry: z.number().int().min(1).max(10_000).default(5),
  find_time_seconds: z.number().int().min(1).max(7 * 86_400).default(600),
  /** Weight of each detection kind in 0..1 (how sure a line of that kind is an attack). */
  severity: z.record(z.string().max(64), z.number().min(0).max(1)).default({}),
  default_severity: z.number().min(0).max(1).default(0.6),
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
    else state = { events: [], quietUntil: -Infinity };
    this.addresses.set(detection.ip, state);
    if (this.addresses.size > this.options.max_tracked) this.addresses.delete(this.addresses.keys().next().value!);

    if (detection.ts < state.quietUntil) return undefined;
    const from = detection.ts - find_time_seconds;
    state.events = state.events.filter((e) => e.ts > from);
    state.events.push({ ts: detection.ts, attempts: Math.max(1, detection.attempts), kind: detection.kind });
    const count = state.events.reduce((n, e) => n + e.attempts, 0);
    if (count < max_retry) return undefined;

    const candidate: ReportCandidate = {
      ip: detection.ip,
      confidence: this.confidence(state.events, count),
      source: detection.source,
      notes: notes(state.events, count, detection.source),
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

  /**
   * Attempt-weighted mean severity of the window, scaled by how far the count went past the
   * threshold: 1 - e^(-count/max_retry) is 0.63 at the threshold and nears 1 at a few times it,
   * mapped onto 0.5..1 so that a bare threshold crossing keeps most of the severity.
   */
  private confidence(events: Seen[], count: number): number {
    const severity = (kind: string) => this.options.severity[kind] ?? DEFAULT_SEVERITY[kind] ?? this.options.default_severity;
    const mean = events.reduce((s, e) => s + severity(e.kind) * e.attempts, 0) / count;
    const growth = 1 - Math.exp(-count / this.options.max_retry);
    const value = mean * (0.5 + 0.5 * growth);
    return Math.min(1, Math.max(0.01, Math.round(value * 100) / 100));
  }
}

function notes(events: Seen[], count: number, source: string): string {
  const kinds = new Map<string, number>();
  for (const e of events) kinds.set(e.kind, (kinds.get(e.kind) ?? 0) + e.attempts);
  const span = Math.round(events.at(-1)!.ts - events[0]!.ts);
  const list = [...kinds].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([k, n]) => `${k} x${n}`);
  return `${count} ${source} attempts in ${span}s: ${list.join(', ')}`;
}
