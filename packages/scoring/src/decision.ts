// The one blocking precedence shared by every consumer: server lists, pages and look-ups, and
// the agent. A consumer that decides on its own would let feeds and enforcement disagree.

export type Decision = -1 | 0 | 1;

/** The organization's extra rule (`blocking_roule`, spec section 2.12). */
export interface BlockingRule {
  readonly score: number;
  readonly tags: readonly string[];
}

export interface BlockInput {
  /** The address is in the caller organization's `reserved_ips`. */
  readonly reserved: boolean;
  /** The caller organization's decision: -1 follow the score, 0 whitelist, 1 blacklist. */
  readonly decision: Decision;
  /** End of a blacklist decision, epoch seconds; null means no end. */
  readonly ttl: number | null;
  /** Epoch seconds. */
  readonly now: number;
  readonly liveScore: number;
  readonly threshold: number;
  readonly blockingRule?: BlockingRule | null;
  /** Tags the indicator carries. */
  readonly tags?: readonly string[];
}

export type BlockReason =
  | 'reserved'
  | 'whitelist'
  | 'blacklist'
  | 'score'
  | 'blocking_rule'
  | 'below_threshold';

export interface BlockVerdict {
  readonly blocked: boolean;
  readonly reason: BlockReason;
}

/**
 * Precedence, first match wins:
 * reserved (never blocks) > whitelist, decision 0 (never blocks) > blacklist, decision 1, while
 * ttl is null or ttl > now > live score >= threshold > blocking rule (live score >= rule.score
 * and the indicator carries at least one of rule.tags) > not blocked.
 * An expired blacklist falls through to the score, as if no decision had been taken.
 */
export function isBlocked(input: BlockInput): BlockVerdict {
  if (input.reserved) return { blocked: false, reason: 'reserved' };
  if (input.decision === 0) return { blocked: false, reason: 'whitelist' };
  if (input.decision === 1 && (input.ttl === null || input.ttl > input.now)) {
    return { blocked: true, reason: 'blacklist' };
  }
  if (input.liveScore >= input.threshold) return { blocked: true, reason: 'score' };
  if (matchesRule(input.liveScore, input.blockingRule, input.tags)) {
    return { blocked: true, reason: 'blocking_rule' };
  }
  return { blocked: false, reason: 'below_threshold' };
}

function matchesRule(
  score: number,
  rule: BlockingRule | null | undefined,
  tags: readonly string[] | undefined,
): boolean {
  if (!rule || !tags || score < rule.score) return false;
  return rule.tags.some((tag) => tags.includes(tag));
}
