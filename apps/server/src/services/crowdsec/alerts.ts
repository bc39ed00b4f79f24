import { ApiError, type CrowdsecAlert } from '@rampart/contracts';
import type { Principal } from '../../plugins/principal.ts';
import type { Store } from '../../store/index.ts';
import type { Ipv4Reports } from '../ipv4/reports.ts';

/*
 * CrowdSec alerts as Rampart reports. Each alert (one source address or range that overflowed
 * one scenario's bucket) becomes one report of the watcher's organization: `source` and the
 * severity behind `confidence` come from the scenario (SCENARIO_RULES, first match wins), the
 * confidence grows with the events the bucket held. Documented in docs/integrations.md ("CrowdSec agents").
 */

export interface ScenarioRule {
  /** A scenario name (`crowdsecurity/ssh-bf`) or a pattern over it. */
  match: string | RegExp;
  /** The report source: the detection label Rampart's own agent uses for the same evidence. */
  source: string;
  /** The confidence of an alert that overflowed at exactly the scenario's capacity + 1 events. */
  severity: number;
}

export const SCENARIO_RULES: readonly ScenarioRule[] = [
  { match: 'crowdsecurity/ssh-bf', source: 'ssh_log', severity: 0.8 },
  { match: 'crowdsecurity/ssh-bf_user-enum', source: 'ssh_log', severity: 0.8 },
  { match: 'crowdsecurity/ssh-slow-bf', source: 'ssh_log', severity: 0.7 },
  { match: 'crowdsecurity/ssh-cve-2024-6387', source: 'ssh_log', severity: 0.6 },
  { match: /ssh/i, source: 'ssh_log', severity: 0.7 },
  { match: /(^|\/)(http|nginx|apache|iis|traefik|haproxy|caddy|modsecurity|appsec|vpatch|wordpress|wp|nextcloud|jira|grafana|f5|fortinet|thinkphp|log4j|apache_log4j)[-_]/i, source: 'waf_log', severity: 0.6 },
  { match: /(iptables|nftables|netfilter|pf|opnsense|pfsense|firewall|port[-_]?scan|scan-multi_ports)/i, source: 'packet_filter', severity: 0.6 },
];

/** Scenarios no rule matches: a report from CrowdSec all the same, at a lower severity. */
export const DEFAULT_SCENARIO_RULE: ScenarioRule = { match: '*', source: 'crowdsec', severity: 0.5 };

export function scenarioRule(scenario: string): ScenarioRule {
  return SCENARIO_RULES.find((r) => (typeof r.match === 'string' ? r.match === scenario : r.match.test(scenario))) ?? DEFAULT_SCENARIO_RULE;
}

/**
 * confidence = 1 − (1 − severity) ^ (events_count / (capacity + 1)), two decimals in 0.01..0.99:
 * at the count that overflows the bucket (capacity + 1) it is the scenario's severity, and each
 * further event brings it closer to 1, as the agent's own policy does with attempts beyond
 * `max_retry` (packages/plugin-kit/src/policy.ts). A scenario without a capacity (triggers,
 * counters: 0 or -1) overflows at one event.
 */
export function alertConfidence(severity: number, eventsCount: number, capacity: number | undefined): number {
  const overflow = Math.max(1, (capacity ?? 0) + 1);
  const ratio = Math.min(100, Math.max(0, eventsCount) / overflow);
  const value = 1 - Math.pow(1 - severity, ratio);
  return Math.min(0.99, Math.max(0.01, Math.round(value * 100) / 100));
}

function refused(path: string, message: string): ApiError {
  return new ApiError('validation_failed', `${path}: ${message}; nothing was stored`, { errors: [{ path, message }] });
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * The IPv4 address or network an alert names (`source.scope` Ip or Range, `source.value`, else
 * `source.ip` / `source.range`), or a 400 naming the field: Rampart holds IPv4 only, and other
 * scopes (Country, AS, Username…) name no address.
 */
export function alertAddress(alert: CrowdsecAlert, index: number): { ip: string; path: string } {
  const scope = alert.source.scope.toLowerCase();
  const base = `body.${index}.source`;
  if (scope !== 'ip' && scope !== 'range') throw refused(`${base}.scope`, `scope ${JSON.stringify(alert.source.scope)} names no address: only Ip and Range alerts become reports`);
  const field = alert.source.value ? 'value' : scope === 'ip' ? 'ip' : 'range';
  const value = (alert.source.value || (scope === 'ip' ? alert.source.ip : alert.source.range) || '').trim();
  const path = `${base}.${field}`;
  if (value.includes(':')) throw refused(path, `${value} is an IPv6 address or network: Rampart holds IPv4 indicators only`);
  const [address, prefix, extra] = value.split('/');
  const prefixOk = scope === 'ip' ? prefix === undefined : prefix !== undefined && /^(3[0-2]|[12]?\d)$/.test(prefix);
  if (extra !== undefined || !address || !IPV4.test(address) || !prefixOk) {
    throw refused(path, `${JSON.stringify(value)} is not ${scope === 'ip' ? 'an IPv4 address' : 'an IPv4 network in CIDR notation'}`);
  }
  return { ip: value, path };
}

/** The report an alert becomes (without its address), and the notes that keep the alert's facts. */
export function alertReport(alert: CrowdsecAlert, gaid: string): { confidence: number; source: string; notes: string } {
  const rule = scenarioRule(alert.scenario);
  const events = `${alert.events_count} event${alert.events_count === 1 ? '' : 's'}`;
  return {
    confidence: alertConfidence(rule.severity, alert.events_count, alert.capacity),
    source: rule.source,
    notes: `crowdsec ${alert.scenario} on ${gaid}: ${events} from ${alert.start_at} to ${alert.stop_at}`.slice(0, 1024),
  };
}

export interface CrowdsecAlertsDeps {
  store: Store;
  reports: Pick<Ipv4Reports, 'reportAll'>;
}

/** `POST v1/alerts` of a watcher: every alert a report of its organization, all or nothing. */
export class CrowdsecAlerts {
  constructor(private readonly deps: CrowdsecAlertsDeps) {}

  /** Stores the alerts' reports; returns, per alert, the id of the IPv4 indicator it went to. */
  async post(principal: Principal, alerts: readonly CrowdsecAlert[]): Promise<string[]> {
    const gaid = principal.agent!.gaid;
    const reports = alerts.map((alert, i) => ({ ...alertAddress(alert, i), ...alertReport(alert, gaid) }));
    const networks = await this.deps.reports.reportAll(principal, reports);
    await this.checkIn(principal);
    const ids = await this.deps.store.ipv4.indicatorIds(networks);
    return networks.map((n) => String(ids.get(n) ?? ''));
  }

  /** A login, heartbeat or alert push is the watcher agent's check-in. */
  async checkIn(principal: Principal): Promise<void> {
    await this.deps.store.agents.checkIn(principal.org.id, principal.agent!.gaid, 'crowdsec_watcher');
  }
}
