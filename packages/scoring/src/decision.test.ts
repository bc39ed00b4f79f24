import { describe, expect, it } from 'vitest';
import { isBlocked } from './decision.ts';
import type { BlockInput } from './decision.ts';

const NOW = 1_700_000_000;
const base: BlockInput = {
  reserved: false,
  decision: -1,
  ttl: null,
  now: NOW,
  liveScore: 50,
  threshold: 100,
};

describe('isBlocked', () => {
  it('never blocks a reserved address, whatever the decision or score', () => {
    expect(isBlocked({ ...base, reserved: true, decision: 1, liveScore: 1000 })).toEqual({
      blocked: false,
      reason: 'reserved',
    });
  });

  it('never blocks a whitelisted indicator, even above the threshold or matching the rule', () => {
    const input: BlockInput = {
      ...base,
      decision: 0,
      liveScore: 900,
      blockingRule: { score: 1, tags: ['ssh'] },
      tags: ['ssh'],
    };
    expect(isBlocked(input)).toEqual({ blocked: false, reason: 'whitelist' });
  });

  it('blocks a blacklisted indicator without a ttl, even with a low score', () => {
    expect(isBlocked({ ...base, decision: 1, liveScore: 0 })).toEqual({
      blocked: true,
      reason: 'blacklist',
    });
  });

  it('blocks a blacklisted indicator until its ttl', () => {
    expect(isBlocked({ ...base, decision: 1, ttl: NOW + 1 })).toEqual({
      blocked: true,
      reason: 'blacklist',
    });
  });

  it('falls back to the score once the blacklist ttl has passed', () => {
    expect(isBlocked({ ...base, decision: 1, ttl: NOW })).toEqual({
      blocked: false,
      reason: 'below_threshold',
    });
    expect(isBlocked({ ...base, decision: 1, ttl: NOW - 60, liveScore: 100 })).toEqual({
      blocked: true,
      reason: 'score',
    });
  });

  it('blocks when the live score reaches the threshold', () => {
    expect(isBlocked({ ...base, liveScore: 100 })).toEqual({ blocked: true, reason: 'score' });
    expect(isBlocked({ ...base, liveScore: 99.999 })).toEqual({
      blocked: false,
      reason: 'below_threshold',
    });
  });

  it('prefers the score reason over the blocking rule when both hold', () => {
    const input: BlockInput = {
      ...base,
      liveScore: 150,
      blockingRule: { score: 10, tags: ['ssh'] },
      tags: ['ssh'],
    };
    expect(isBlocked(input).reason).toBe('score');
  });

  describe('blocking rule', () => {
    const rule = { score: 40, tags: ['ssh', 'smtp'] };

    it('blocks below the threshold when the score and one tag match', () => {
      expect(isBlocked({ ...base, blockingRule: rule, tags: ['web', 'smtp'] })).toEqual({
        blocked: true,
        reason: 'blocking_rule',
      });
      expect(isBlocked({ ...base, liveScore: 40, blockingRule: rule, tags: ['ssh'] }).blocked).toBe(
        true,
      );
    });

    it('does not block when the score is below the rule score', () => {
      expect(isBlocked({ ...base, liveScore: 39.9, blockingRule: rule, tags: ['ssh'] })).toEqual({
        blocked: false,
        reason: 'below_threshold',
      });
    });

    it('does not block when no tag matches', () => {
      expect(isBlocked({ ...base, blockingRule: rule, tags: ['web'] }).blocked).toBe(false);
      expect(isBlocked({ ...base, blockingRule: rule, tags: [] }).blocked).toBe(false);
      expect(isBlocked({ ...base, blockingRule: rule }).blocked).toBe(false);
      const noTags = { score: 0, tags: [] };
      expect(isBlocked({ ...base, blockingRule: noTags, tags: ['ssh'] }).blocked).toBe(false);
    });

    it('does nothing when absent', () => {
      expect(isBlocked({ ...base, blockingRule: null, tags: ['ssh'] })).toEqual({
        blocked: false,
        reason: 'below_threshold',
      });
    });
  });
});
