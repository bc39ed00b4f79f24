import { isBlocked, lastSecondAtOrAbove, liveScore, type BlockReason } from '@rampart/scoring';
import type { Store } from '../../store/index.ts';
import type { Ipv4ListFilter } from '../../store/ipv4.ts';
import type { PolicyChangeScope } from '../../store/ipv4-ingest.ts';
import { parseIpv4 } from '@rampart/contracts';

/** What an organization's settings say about blocking IPv4 indicators. */
export interface Ipv4Policy {
  orgId: number;
  reserved: string[];
  ranges: Array<{ start: number; end: number }>;
  rule: { score: number; tags: string[] } | null;
}

/** Policies derived from cached settings documents (a new document object means a change). */
const derived = new WeakMap<object, Ipv4Policy>();

/** The organization's IPv4 policy, from this replica's settings cache (SettingsStore.organizationCached). */
export async function loadIpv4Policy(store: Store, orgId: number): Promise<Ipv4Policy> {
  const { document } = await store.settings.organizationCached(orgId);
  return policyOf(orgId, document);
}

/** `loadIpv4Policy` without a promise: undefined when the organization's settings are not cached now. */
export function cachedIpv4Policy(store: Store, orgId: number): Ipv4Policy | undefined {
  const cached = store.settings.organizationIfCached(orgId);
  return cached && policyOf(orgId, cached.document);
}

function policyOf(orgId: number, document: PolicyDocument & object): Ipv4Policy {
  const known = derived.get(document);
  if (known && known.orgId === orgId) return known;
  const policy = ipv4Policy(orgId, document);
  derived.set(document, policy);
  return policy;
}

/** What of an organization document the IPv4 policy reads. */
type PolicyDocument = { reserved_ips: string[]; blocking_roule?: { score: number; tags: string[] } | null | undefined };

function ipv4Policy(orgId: number, document: PolicyDocument): Ipv4Policy {
  const ranges = document.reserved_ips.flatMap((cidr) => {
    const r = parseIpv4(cidr);
    return r ? [r] : [];
  });
  const rule = document.blocking_roule && document.blocking_roule.tags.length > 0 ? { score: document.blocking_roule.score, tags: [...document.blocking_roule.tags] } : null;
  return { orgId, reserved: [...document.reserved_ips], ranges, rule };
}

/**
 * Which held records an organization's settings change re-delivers to it (decisions.md): those
 * overlapping a reserved range added or removed, and, when the blocking rule changed, those
 * carrying one of its tags before or after.
 */
export function policyChangeScope(before: PolicyDocument, after: PolicyDocument): PolicyChangeScope {
  const was = ipv4Policy(0, before);
  const is = ipv4Policy(0, after);
  const ranges = [...was.reserved.filter((r) => !is.reserved.includes(r)), ...is.reserved.filter((r) => !was.reserved.includes(r))].filter((r) => parseIpv4(r) !== null);
  const ruleChanged = JSON.stringify(was.rule) !== JSON.stringify(is.rule);
  const ruleTags = ruleChanged ? [...new Set([...(was.rule?.tags ?? []), ...(is.rule?.tags ?? [])])] : [];
  return { ranges, ruleTags };
}

/** The reserved range a network overlaps, or null. */
export function reservedRangeOf(policy: Ipv4Policy, network: string): string | null {
  if (policy.ranges.length === 0) return null;
  const r = parseIpv4(network);
  if (!r) return null;
  const i = policy.ranges.findIndex((x) => x.start <= r.end && r.start <= x.end);
  return i < 0 ? null : policy.reserved[i]!;
}

interface DecidableRow {
  network: string;
  score: number;
  ts: number;
  decision: number | null;
  ttl: number | null;
  tags: string[];
  sources: string[];
}

export interface RecordDecision {
  /** 0 or 1 when a decision applies for the caller; null when the score alone decides. */
  decision: 0 | 1 | null;
  ttl: number | null;
  reason: BlockReason;
}

/**
 * The `decision`/`ttl` an IPv4 record carries for the caller (decisions.md, Compatibility): the
 * shared precedence (`isBlocked`) reduced to what a client that knows only its threshold can
 * follow. Reserved and whitelisted records say 0. A running blacklist says 1 until its ttl; a
 * matching blocking rule says 1 until the last second its live score is still >= the rule's
 * score (ttl is the first second after it); both together say 1 until the later of the two
 * (both block from now on, so their union ends at the later end). Otherwise null: block when
 * live score >= threshold. `ts`/`score` are the record's anchor as the caller sees it.
 * Indicators carry no tags of their own yet, so the rule's tags match report sources too.
 */
export function recordDecision(row: DecidableRow, policy: Ipv4Policy, now: number): RecordDecision {
  const decision = row.decision === 0 || row.decision === 1 ? row.decision : -1;
  const verdict = isBlocked({
    reserved: reservedRangeOf(policy, row.network) !== null,
    decision,
    ttl: row.ttl,
    now,
    liveScore: liveScore(row.score, now - row.ts),
    threshold: Number.POSITIVE_INFINITY,
    blockingRule: policy.rule,
    tags: [...row.tags, ...row.sources],
  });
  if (verdict.reason === 'reserved' || verdict.reason === 'whitelist') return { decision: 0, ttl: null, reason: verdict.reason };
  const ruleEnd = verdict.reason === 'blocking_rule' || (verdict.reason === 'blacklist' && row.ttl !== null && ruleMatches(row, policy)) ? ruleTtl(row, policy) : null;
  if (verdict.reason === 'blacklist') {
    const ttl = row.ttl === null ? null : ruleEnd === null ? row.ttl : ruleEnd === Infinity ? null : Math.max(row.ttl, ruleEnd);
    return { decision: 1, ttl, reason: verdict.reason };
  }
  if (verdict.reason === 'blocking_rule') return { decision: 1, ttl: ruleEnd === Infinity ? null : ruleEnd, reason: verdict.reason };
  return { decision: null, ttl: null, reason: verdict.reason };
}

function ruleMatches(row: DecidableRow, policy: Ipv4Policy): boolean {
  if (!policy.rule) return false;
  const tags = [...row.tags, ...row.sources];
  return policy.rule.tags.some((t) => tags.includes(t));
}

/** First second at which the blocking rule no longer holds (-1 + ts + 1 when it never held). */
function ruleTtl(row: DecidableRow, policy: Ipv4Policy): number {
  const last = lastSecondAtOrAbove(row.score, policy.rule!.score);
  return last === Infinity ? Infinity : row.ts + last + 1;
}

/** Larger than any ts: no row qualifies. */
const NEVER = Number.MAX_SAFE_INTEGER;

/**
 * For s0 = 1..1000 (index s0 - 1): the smallest integer `ts` for which
 * liveScore(s0, now - ts) >= threshold, computed with liveScore itself so that the store's
 * filter and the shared formula agree to the last bit.
 */
export function liveCutoffs(threshold: number, now: number): number[] {
  const lasts = lastSeconds(threshold);
  const out = new Array<number>(1000);
  for (let i = 0; i < 1000; i++) {
    const last = lasts[i]!;
    out[i] = last < 0 ? NEVER : last === Infinity ? -NEVER : now - last;
  }
  return out;
}

/** Thresholds whose `lastSecondAtOrAbove` table is kept (a list request asks one or two). */
const LAST_SECONDS_KEPT = 128;
const lastSecondsOf = new Map<number, Float64Array>();

/**
 * `lastSecondAtOrAbove(s0, threshold)` for s0 = 1..1000, which does not depend on the instant:
 * computed once per threshold (~0.4 ms of liveScore calls) instead of on every list request.
 */
function lastSeconds(threshold: number): Float64Array {
  let lasts = lastSecondsOf.get(threshold);
  if (lasts === undefined) {
    lasts = new Float64Array(1000);
    for (let s0 = 1; s0 <= 1000; s0++) lasts[s0 - 1] = lastSecondAtOrAbove(s0, threshold);
    if (lastSecondsOf.size >= LAST_SECONDS_KEPT) lastSecondsOf.clear();
    lastSecondsOf.set(threshold, lasts);
  }
  return lasts;
}

/** The list filter of one organization, threshold and instant. */
export function ipv4ListFilter(policy: Ipv4Policy, threshold: number, now: number, hasDecisions: boolean, visibleUpTo: number | null = null): Ipv4ListFilter {
  return {
    visibleUpTo,
    orgId: policy.orgId,
    now,
    cutoffs: liveCutoffs(threshold, now),
    reserved: policy.reserved,
    rule: policy.rule ? { tags: policy.rule.tags, cutoffs: liveCutoffs(policy.rule.score, now) } : null,
    hasDecisions,
  };
}
