import { isBlocked, liveScore, secondsUntilBelow, type BlockReason, type Decision } from '@rampart/scoring';
import type { Store } from '../store/index.ts';
import type { Ipv4ListFilter } from '../store/ipv4.ts';
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
  const known = derived.get(document);
  if (known && known.orgId === orgId) return known;
  const policy = ipv4Policy(orgId, document);
  derived.set(document, policy);
  return policy;
}

function ipv4Policy(orgId: number, document: { reserved_ips: string[]; blocking_roule?: { score: number; tags: string[] } | null | undefined }): Ipv4Policy {
  const ranges = document.reserved_ips.flatMap((cidr) => {
    const r = parseIpv4(cidr);
    return r ? [r] : [];
  });
  const rule = document.blocking_roule && document.blocking_roule.tags.length > 0 ? { score: document.blocking_roule.score, tags: [...document.blocking_roule.tags] } : null;
  return { orgId, reserved: [...document.reserved_ips], ranges, rule };
}

/** The reserved range a network overlaps, or null. */
export function reservedRangeOf(policy: Ipv4Policy, network: string): string | null {
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
  decision: Decision;
  ttl: number | null;
  reason: BlockReason;
}

/**
 * The `decision`/`ttl` an IPv4 record carries for the caller: the shared precedence
 * (`isBlocked`) evaluated without a score threshold, which only the consumer knows. Reserved and
 * whitelisted records say 0, a running blacklist says 1 until its ttl, a matching blocking rule
 * says 1 until the live score falls below the rule's score; otherwise -1 (follow the score).
 * Indicators carry no tags of their own yet, so the rule's tags match report sources too.
 */
export function recordDecision(row: DecidableRow, policy: Ipv4Policy, now: number): RecordDecision {
  const verdict = isBlocked({
    reserved: reservedRangeOf(policy, row.network) !== null,
    decision: (row.decision ?? -1) as Decision,
    ttl: row.ttl,
    now,
    liveScore: liveScore(row.score, now - row.ts),
    threshold: Number.POSITIVE_INFINITY,
    blockingRule: policy.rule,
    tags: [...row.tags, ...row.sources],
  });
  switch (verdict.reason) {
    case 'reserved':
    case 'whitelist':
      return { decision: 0, ttl: null, reason: verdict.reason };
    case 'blacklist':
      return { decision: 1, ttl: row.ttl, reason: verdict.reason };
    case 'blocking_rule':
      return { decision: 1, ttl: row.ts + Math.floor(secondsUntilBelow(row.score, policy.rule!.score)), reason: verdict.reason };
    default:
      return { decision: -1, ttl: null, reason: verdict.reason };
  }
}

/** Larger than any ts: no row qualifies. */
const NEVER = Number.MAX_SAFE_INTEGER;

/**
 * For s0 = 1..1000 (index s0 - 1): the smallest integer `ts` for which
 * liveScore(s0, now - ts) >= threshold, computed with liveScore itself so that the store's
 * filter and the shared formula agree to the last bit.
 */
export function liveCutoffs(threshold: number, now: number): number[] {
  const out = new Array<number>(1000);
  for (let s0 = 1; s0 <= 1000; s0++) {
    if (liveScore(s0, 0) < threshold) {
      out[s0 - 1] = NEVER;
      continue;
    }
    const until = secondsUntilBelow(s0, threshold);
    if (!Number.isFinite(until)) {
      out[s0 - 1] = -NEVER;
      continue;
    }
    // Largest whole elapsed second that still qualifies (the live score falls with time).
    let e = Math.max(0, Math.floor(until));
    while (e > 0 && liveScore(s0, e) < threshold) e -= 1;
    while (liveScore(s0, e + 1) >= threshold) e += 1;
    out[s0 - 1] = now - e;
  }
  return out;
}

/** The list filter of one organization, threshold and instant. */
export function ipv4ListFilter(policy: Ipv4Policy, threshold: number, now: number, hasDecisions: boolean): Ipv4ListFilter {
  return {
    orgId: policy.orgId,
    now,
    cutoffs: liveCutoffs(threshold, now),
    reserved: policy.reserved,
    rule: policy.rule ? { tags: policy.rule.tags, cutoffs: liveCutoffs(policy.rule.score, now) } : null,
    hasDecisions,
  };
}
