import { AnyDigest, ApiError, Ipv4OrNetwork, type IndicatorKindName } from '@rampart/contracts';
import type { AuditActor, Store } from '../store/index.ts';
import { audit } from './operators/audit.ts';
import type { EventBus } from './events.ts';
import { decideFile } from './named/files.ts';
import { normalizeDomain, normalizeUrl } from './named/indicator-names.ts';
import type { Ipv4Reports } from './ipv4/reports.ts';
import { decideNamed } from './named/named-indicators.ts';

/*
 * One way to set or clear an organization's decision on any kind of indicator (issue 37): the
 * API's `PUT /ips|files|domains|urls/{value}` and `rampart decision add|clear` both come here.
 * The decision keeps its reason and who set it; the change is written to the audit log
 * (`decision.set` or `decision.clear`, detail: kind, value, decision, ttl, reason).
 */

export interface DecisionDeps {
  store: Store;
  events: EventBus;
  ipv4Reports: Ipv4Reports;
}

export interface DecisionChange {
  kind: IndicatorKindName;
  /** Canonical for domains, URLs and digests (canonicalValue); IPv4 is made canonical here. */
  value: string;
  decision: -1 | 0 | 1;
  ttl?: number | undefined;
  reason?: string | undefined;
}

export interface DecisionApplied {
  kind: IndicatorKindName;
  value: string;
  decision: -1 | 0 | 1;
  ttl: number | null;
  reason: string | null;
  set_by: string;
}

/** The value as the service keys it, or a 400 naming `path`: an address or network, a domain, a URL, an MD5/SHA1/SHA256 digest. */
export function canonicalValue(kind: IndicatorKindName, raw: string, path: string): string {
  const refuse = (message: string) => new ApiError('validation_failed', `${path}: ${message}`, { errors: [{ path, message }] });
  switch (kind) {
    case 'ipv4': {
      if (!Ipv4OrNetwork.safeParse(raw).success) throw refuse('not an IPv4 address or CIDR network');
      return raw;
    }
    case 'domain':
      return normalizeDomain(raw, path);
    case 'url':
      return normalizeUrl(raw, path);
    case 'file': {
      if (!AnyDigest.safeParse(raw).success) throw refuse('not an MD5, SHA1 or SHA256 digest in hex');
      return raw.toUpperCase();
    }
  }
}

export async function applyDecision(deps: DecisionDeps, orgId: number, actor: AuditActor, change: DecisionChange, path = 'params'): Promise<DecisionApplied> {
  const reason = change.reason ? change.reason : null;
  const note = { reason, setBy: actor.username };
  let value = change.value;
  if (change.ttl !== undefined && change.kind !== 'ipv4') {
    throw new ApiError('validation_failed', 'ttl: only a decision on an IPv4 address or network has a ttl', { errors: [{ path: 'body.ttl', message: 'only for ipv4' }] });
  }
  switch (change.kind) {
    case 'ipv4': {
      const network = await deps.ipv4Reports.decide(orgId, change.value, change.decision, change.ttl, note, path === 'params' ? 'params.ip' : path);
      value = network.endsWith('/32') ? network.slice(0, -3) : network;
      break;
    }
    case 'file':
      await decideFile(deps.store, deps.events, orgId, change.value, { decision: change.decision }, note);
      value = change.value.toUpperCase();
      break;
    default:
      await decideNamed(deps.store, deps.events, change.kind, orgId, change.value, change.decision, note);
  }
  const applied: DecisionApplied = { kind: change.kind, value, decision: change.decision, ttl: change.ttl ?? null, reason, set_by: actor.username };
  await audit(deps.store, actor, {
    orgId,
    action: change.decision === -1 ? 'decision.clear' : 'decision.set',
    target: `${change.kind}:${value}`,
    detail: { kind: change.kind, value, decision: change.decision, ttl: applied.ttl, reason },
  });
  return applied;
}
