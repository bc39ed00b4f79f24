import { describe, expect, it } from 'vitest';
import { lastSecondAtOrAbove, liveScore } from '@rampart/scoring';
import { credentialFrom } from '../operators/api-keys.ts';
import { confidenceOf, indicatorId, parseIndicatorId, stix21Pattern, validityEnd, versionsOf, type IndicatorState } from './stix21.ts';

const TS = 1_800_000_000;

function state(over: Partial<IndicatorState> = {}): IndicatorState {
  return { kind: 'domain', id: 7, subject: { kind: 'domain', value: 'evil.example' }, score: 200, ts: TS, entryTs: TS - 60, members: 1, events: 1, tags: [], decision: -1, ttl: null, ruleScore: null, ...over };
}

describe('STIX 2.1 indicator versions', () => {
  const decayEnd = (score: number, threshold: number) => TS + lastSecondAtOrAbove(score, threshold) + 1;

  it('ends validity when the live score falls below the lowest band, at the second liveScore says', () => {
    const end = validityEnd(state(), 1)!;
    expect(end).toBe(decayEnd(200, 1));
    expect(liveScore(200, end - 1 - TS)).toBeGreaterThanOrEqual(1);
    expect(liveScore(200, end - TS)).toBeLessThan(1);
    expect(validityEnd(state(), 60)).toBe(decayEnd(200, 60));
    // A lowest band of 0 never decays.
    expect(validityEnd(state(), 0)).toBeNull();
  });

  it('follows the decision precedence: whitelist at the anchor, blacklist until ttl (or never), the blocking rule while it holds', () => {
    expect(validityEnd(state({ decision: 0 }), 1)).toBe(TS);
    expect(validityEnd(state({ decision: 1 }), 1)).toBeNull();
    expect(validityEnd(state({ decision: 1, ttl: TS + 10 }), 1)).toBe(decayEnd(200, 1));
    expect(validityEnd(state({ decision: 1, ttl: TS + 10 ** 9 }), 1)).toBe(TS + 10 ** 9);
    // A rule below the lowest band keeps the indicator longer; above it changes nothing.
    expect(validityEnd(state({ ruleScore: 0.5 }), 1)).toBe(decayEnd(200, 0.5));
    expect(validityEnd(state({ ruleScore: 150 }), 1)).toBe(decayEnd(200, 1));
  });

  it('gives the anchor version, and a revoked version once the end has passed', () => {
    const end = decayEnd(200, 1);
    expect(versionsOf(state(), 1, end)).toEqual([{ modified: TS, revoked: false, validUntil: end, liveScore: 200 }]);
    expect(versionsOf(state(), 1, end + 1)).toEqual([
      { modified: TS, revoked: false, validUntil: end, liveScore: 200 },
      { modified: end, revoked: true, validUntil: end, liveScore: liveScore(200, end - TS) },
    ]);
    expect(versionsOf(state({ decision: 0 }), 1, TS + 10 ** 9)).toEqual([{ modified: TS, revoked: true, validUntil: null, liveScore: 200 }]);
    // Below the lowest band already at its anchor: one version, revoked.
    expect(versionsOf(state({ score: 50 }), 60, TS + 1)).toEqual([{ modified: TS, revoked: true, validUntil: null, liveScore: 50 }]);
    expect(versionsOf(state({ decision: 1 }), 1, TS + 10 ** 9)).toEqual([{ modified: TS, revoked: false, validUntil: null, liveScore: 200 }]);
  });

  it('maps the live score 1-1000 onto confidence 0-100', () => {
    expect([0, 1, 4, 5, 60, 999, 1000, 1200].map(confidenceOf)).toEqual([0, 0, 0, 1, 6, 100, 100, 100]);
  });

  it('derives ids that name one row of one kind and read back', () => {
    const id = indicatorId('domain', 123_456);
    expect(id).toMatch(/^indicator--[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-00000001e240$/);
    expect(parseIndicatorId('domain', id)).toBe(123_456);
    expect(parseIndicatorId('url', id)).toBeNull();
    // A changed hash digit names nothing.
    expect(parseIndicatorId('domain', `${id.slice(0, 11)}${id[11] === '0' ? '1' : '0'}${id.slice(12)}`)).toBeNull();
    expect(parseIndicatorId('domain', 'indicator--00000000-0000-4000-8000-000000000000')).toBeNull();
    expect(indicatorId('file', 1)).not.toBe(indicatorId('ipv4', 1));
  });

  it('writes networks as CIDR and file digests joined by OR', () => {
    expect(stix21Pattern({ kind: 'ipv4', value: '45.33.40.0/24', isNetwork: true })).toBe("[ipv4-addr:value = '45.33.40.0/24']");
    expect(stix21Pattern({ kind: 'file', md5: 'AA', sha1: null, sha256: 'BB', fileName: '', fileType: 'application/zip' })).toBe("[file:hashes.MD5 = 'AA' OR file:hashes.'SHA-256' = 'BB']");
  });
});

describe('API key credentials', () => {
  it('reads the key from Basic (as password, or as user name with an empty password), Bearer or the bare header', () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    expect(credentialFrom(`Basic ${b64('soc:rmp_key')}`)).toBe('rmp_key');
    expect(credentialFrom(`basic ${b64('rmp_key:')}`)).toBe('rmp_key');
    expect(credentialFrom(`Basic ${b64('no-colon')}`)).toBeUndefined();
    expect(credentialFrom(`Basic ${b64(':')}`)).toBeUndefined();
    expect(credentialFrom('Bearer rmp_key')).toBe('rmp_key');
    expect(credentialFrom('rmp_key')).toBe('rmp_key');
  });
});
