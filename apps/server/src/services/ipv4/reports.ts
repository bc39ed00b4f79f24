import { ApiError, describeIpv4Special, formatIpv4, IPV4_SPECIAL_RANGES, ipv4SpecialRange, parseIpv4, type IpsReportBody } from '@rampart/contracts';
import type { AppConfig } from '../../config.ts';
import type { Principal } from '../../plugins/principal.ts';
import { checkInCaller } from '../agents/checkin.ts';
import { ReservedInBatchError, type DecisionNote, type Ipv4ReportItem, type Store } from '../../store/index.ts';
import type { Enrichment } from '../enrichment/enrichment.ts';
import { randomIdPart } from '../ids.ts';
import type { ReportBatcher } from './ingest.ts';
import type { Rollups } from '../operators/rollups.ts';

/** `10.0.0.7/24` → `10.0.0.0/24`, `10.0.0.7` → `10.0.0.7/32`: one indicator is one row. */
export function canonicalNetwork(ip: string): { network: string; isNetwork: boolean; first: string } {
  const range = parseIpv4(ip)!;
  const first = formatIpv4(range.start);
  return { network: `${first}/${range.prefix}`, isNetwork: range.prefix < 32, first };
}

function fieldError(path: string, message: string): ApiError {
  return new ApiError('validation_failed', `${path}: ${message}`, { errors: [{ path, message }] });
}

/**
 * Only public unicast addresses are indicators: a report (not a decision) of a special-purpose
 * address, or of a network overlapping one, is 400 `non_public_address` naming the range, unless
 * ALLOW_NON_PUBLIC_REPORTS is set (labs); a network wider than MAX_REPORT_PREFIX is 400
 * `network_too_wide`. Firewalls apply `/ipv4` and `/flat` as they are: a reported 10.0.0.0/8
 * would cut every member off its own LAN.
 */
export function assertReportable(ip: string, config: Pick<AppConfig, 'allowNonPublicReports' | 'maxReportPrefix'>, path = 'body.ip'): void {
  const range = parseIpv4(ip)!;
  if (!config.allowNonPublicReports) {
    const special = ipv4SpecialRange(range);
    if (special) {
      const name = describeIpv4Special(special);
      const message = `${ip} ${range.start >= special.start && range.end <= special.end ? 'lies in' : 'overlaps'} ${name}, not a public address`;
      throw new ApiError('non_public_address', `${path}: ${message}`, { errors: [{ path, message }], extra: { range: special.cidr, range_class: special.class } });
    }
  }
  if (range.prefix < config.maxReportPrefix) {
    const message = `/${range.prefix} is wider than /${config.maxReportPrefix}, the widest network a report may name`;
    throw new ApiError('network_too_wide', `${path}: ${message}`, { errors: [{ path, message }], extra: { max_prefix: config.maxReportPrefix } });
  }
}

/** The private-use ranges (RFC 1918): an organization's own networks, which it may decide on whole. */
const PRIVATE_USE = IPV4_SPECIAL_RANGES.filter((r) => r.class === 'private');

/**
 * A decision (whitelist or blacklist) on a network wider than MAX_DECISION_PREFIX (/8) is 400
 * `network_too_wide`: agents apply it as it is, and 0.0.0.0/0 would block (or unblock) the whole
 * address space for every agent of the organization. A network inside a private-use range stays
 * allowed at any width (an organization's own LAN), and a clear (-1) always is, so a decision
 * stored before the limit can still be removed.
 */
export function assertDecidable(ip: string, decision: number, config: Pick<AppConfig, 'maxDecisionPrefix'>, path: string): void {
  if (decision === -1) return;
  const range = parseIpv4(ip)!;
  if (range.prefix >= config.maxDecisionPrefix) return;
  if (PRIVATE_USE.some((p) => range.start >= p.start && range.end <= p.end)) return;
  const message = `/${range.prefix} is wider than /${config.maxDecisionPrefix}, the widest network a decision may name outside the private-use ranges`;
  throw new ApiError('network_too_wide', `${path}: ${message}`, { errors: [{ path, message }], extra: { max_prefix: config.maxDecisionPrefix } });
}

/** A ttl belongs to a blacklisting only, and must lie in the future. */
function assertTtl(decision: number, ttl: number | undefined, now: number): void {
  if (ttl === undefined) return;
  if (decision !== 1) throw fieldError('body.ttl', 'a ttl applies only to decision 1');
  if (ttl <= now) throw fieldError('body.ttl', `must lie in the future (now is ${now})`);
}

export interface Ipv4ReportsDeps {
  config: Pick<AppConfig, 'allowNonPublicReports' | 'maxReportPrefix' | 'maxDecisionPrefix'>;
  store: Store;
  enrichment: Enrichment;
  /** The group-commit engine every report and decision goes through. */
  batcher: ReportBatcher;
  /** Counts each stored report (not a whitelist) for the reports-per-hour rollup. */
  rollups?: Pick<Rollups, 'countReports'>;
}

/** The rules of `POST /ips` and `PUT /ips/{ip}`: who may decide, what may be reported, ttl. */
export class Ipv4Reports {
  constructor(private readonly deps: Ipv4ReportsDeps) {}

  /**
   * A report of an address or network, with the caller's decision when the body named one
   * (`decisionGiven`: an explicit -1 clears a decision; absent keeps it). Returns whether the
   * indicator is new. `gaid`: the agent checking in with the report.
   */
  async report(principal: Principal, body: IpsReportBody, decisionGiven: boolean, gaid: string | undefined): Promise<{ created: boolean; network: string }> {
    const now = Math.floor(Date.now() / 1000);
    // Decisions are the organization's (a whitelist unblocks for every member): never an edge host's.
    if (principal.agent && (decisionGiven || body.ttl !== undefined)) {
      throw new ApiError('forbidden', 'an agent key reports without decision or ttl: decisions belong to the organization (use a contributor key)');
    }
    assertTtl(body.decision, body.ttl, now);
    if (decisionGiven) assertDecidable(body.ip, body.decision, this.deps.config, 'body.ip');
    const decision = decisionGiven ? { value: body.decision as -1 | 0 | 1, ttl: body.ttl ?? null, reason: null, setBy: principal.user.username } : null;
    const outcome = await this.submitReport(principal.org.id, body, decision);
    // An agent key checks in as its own agent, whatever the query names.
    await checkInCaller(this.deps.store, principal, gaid, 'ipv4');
    return outcome;
  }

  /**
   * A report of the organization without a caller (bulk import from the CLI, services/imports):
   * the rules of `report` without a decision. Returns whether the indicator is new.
   */
  reportForOrg(orgId: number, body: Pick<IpsReportBody, 'ip' | 'confidence' | 'source'>): Promise<{ created: boolean; network: string }> {
    return this.submitReport(orgId, { ...body, decision: -1 }, null);
  }

  private async submitReport(orgId: number, body: Pick<IpsReportBody, 'ip' | 'confidence' | 'source' | 'notes' | 'decision'>, decision: Ipv4ReportItem['decision']): Promise<{ created: boolean; network: string }> {
    // A whitelist is the organization saying the address is fine: it must not raise the score
    // for others, so it counts no report (and may name its own LAN).
    const addReport = body.decision !== 0;
    if (addReport) assertReportable(body.ip, this.deps.config);
    const { network, isNetwork, first } = canonicalNetwork(body.ip);
    const outcome = await this.deps.batcher.submit({
      orgId,
      network,
      isNetwork,
      gid: `RMP-RULE-GID-${randomIdPart()}`,
      confidence: body.confidence,
      source: body.source,
      notes: body.notes ? body.notes : null,
      addReport,
      decision,
      ipInfo: this.deps.enrichment.ipInfo(first),
    });
    if (outcome.status === 'reserved') {
      throw new ApiError('reserved_ip', `${body.ip} lies in ${outcome.range}, one of the organization's reserved_ips; it cannot be reported`, {
        extra: { reserved_range: outcome.range },
      });
    }
    if (addReport) this.deps.rollups?.countReports(orgId);
    return { created: outcome.created, network };
  }

  /**
   * Reports stored all or nothing (CrowdSec alerts, services/crowdsec/alerts.ts): each is
   * checked as `report` checks one (`path` names it in errors), then all go in one transaction;
   * one of them reserved by the organization refuses them all (403 `reserved_ip`). Returns the
   * canonical network of each, in order.
   */
  async reportAll(principal: Principal, reports: ReadonlyArray<{ ip: string; confidence: number; source: string; notes: string; path: string }>): Promise<string[]> {
    const items: Ipv4ReportItem[] = reports.map((r) => {
      assertReportable(r.ip, this.deps.config, r.path);
      const { network, isNetwork, first } = canonicalNetwork(r.ip);
      return {
        orgId: principal.org.id,
        network,
        isNetwork,
        gid: `RMP-RULE-GID-${randomIdPart()}`,
        confidence: r.confidence,
        source: r.source,
        notes: r.notes ? r.notes : null,
        addReport: true,
        decision: null,
        ipInfo: this.deps.enrichment.ipInfo(first),
      };
    });
    try {
      await this.deps.batcher.submitAll(items);
    } catch (err) {
      if (!(err instanceof ReservedInBatchError)) throw err;
      const { ip, path } = reports[err.index]!;
      const message = `${ip} lies in ${err.range}, one of the organization's reserved_ips; it cannot be reported`;
      throw new ApiError('reserved_ip', `${path}: ${message}; nothing was stored`, { errors: [{ path, message }], extra: { reserved_range: err.range } });
    }
    this.deps.rollups?.countReports(principal.org.id, items.length);
    return items.map((item) => item.network);
  }

  /**
   * The organization's decision on an address or network, without a report, with who set it
   * and why; returns the canonical network. `path` names the value in errors.
   */
  async decide(orgId: number, ip: string, decision: number, ttl: number | undefined, note: DecisionNote, path = 'params.ip'): Promise<string> {
    assertTtl(decision, ttl, Math.floor(Date.now() / 1000));
    assertDecidable(ip, decision, this.deps.config, path);
    const { network, isNetwork } = canonicalNetwork(ip);
    const item: Ipv4ReportItem = {
      orgId,
      network,
      isNetwork,
      gid: `RMP-RULE-GID-${randomIdPart()}`,
      confidence: 0,
      source: '',
      notes: null,
      addReport: false,
      decision: { value: decision as -1 | 0 | 1, ttl: ttl ?? null, reason: note.reason, setBy: note.setBy },
      ipInfo: null,
    };
    const outcome = await this.deps.batcher.submit(item);
    if (outcome.status === 'reserved') {
      throw new ApiError('reserved_ip', `${ip} lies in ${outcome.range}, one of the organization's reserved_ips`, { extra: { reserved_range: outcome.range } });
    }
    return network;
  }
}
