import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BROWSE_MAX_PAGE_SIZE, DecisionItem, DecisionListQuery, IndicatorListQuery, IndicatorListResponse } from './browse.ts';

const paths = (r: { success: boolean; error?: z.ZodError }) => (r.error ? r.error.issues.map((i) => i.path.join('.')) : []);

describe('browse contracts', () => {
  it('default and bound the page size', () => {
    expect(DecisionListQuery.parse({}).page_size).toBe(50);
    expect(IndicatorListQuery.parse({ page_size: String(BROWSE_MAX_PAGE_SIZE) }).page_size).toBe(500);
    expect(paths(IndicatorListQuery.safeParse({ page_size: '501' }))).toEqual(['page_size']);
    expect(paths(DecisionListQuery.safeParse({ page_size: '0' }))).toEqual(['page_size']);
  });

  it('default the indicator kind to ipv4 and refuse unknown kinds and fields', () => {
    expect(IndicatorListQuery.parse({}).kind).toBe('ipv4');
    expect(paths(IndicatorListQuery.safeParse({ kind: 'ipv6' }))).toEqual(['kind']);
    expect(DecisionListQuery.safeParse({ sort: 'x' }).success).toBe(false);
  });

  it('check filters', () => {
    expect(IndicatorListQuery.parse({ min_score: '10', max_score: '1000', asn: 'AS13335', country: 'de', reporter: 'RMP-GID-ABC' })).toMatchObject({ min_score: 10, max_score: 1000 });
    expect(paths(IndicatorListQuery.safeParse({ max_score: '1001' }))).toEqual(['max_score']);
    expect(paths(IndicatorListQuery.safeParse({ asn: 'cloudflare' }))).toEqual(['asn']);
    expect(paths(IndicatorListQuery.safeParse({ reporter: 'acme' }))).toEqual(['reporter']);
    expect(paths(IndicatorListQuery.safeParse({ decision: '-1' }))).toEqual(['decision']);
    expect(paths(DecisionListQuery.safeParse({ q: '  ' }))).toEqual(['q']);
    expect(paths(DecisionListQuery.safeParse({ q: 'x'.repeat(201) }))).toEqual(['q']);
  });

  it('describe answers', () => {
    expect(DecisionItem.safeParse({ kind: 'ipv4', value: '45.77.1.1', decision: -1, ttl: null, expired: false, updated_at: '', held: false, score: null, live_score: null }).success).toBe(false);
    expect(IndicatorListResponse.parse({ items: [], next_page: null })).toEqual({ items: [], next_page: null });
  });
});

describe('why contracts', async () => {
  const { WhyQuery, WhyResponse } = await import('./why.ts');
  it('need a kind and a value of bounded length', () => {
    expect(WhyQuery.parse({ kind: 'url', value: ' https://x.example/ ' })).toEqual({ kind: 'url', value: 'https://x.example/' });
    expect(paths(WhyQuery.safeParse({ value: '45.77.1.1' }))).toEqual(['kind']);
    expect(paths(WhyQuery.safeParse({ kind: 'ipv4', value: 'x'.repeat(2049) }))).toEqual(['value']);
    expect(WhyQuery.safeParse({ kind: 'ipv4', value: '45.77.1.1', full: 'yes' }).success).toBe(false);
  });
  it('name every reason a verdict can have', () => {
    const base = { kind: 'ipv4', value: '45.77.1.1', at: 1, held: false, decision: null, reserved_range: null, blocking_rule: null, records: [], reporters: [], score_components: null, agents: [] };
    for (const reason of ['reserved', 'whitelist', 'blacklist', 'score', 'blocking_rule', 'below_threshold', 'not_held']) expect(WhyResponse.safeParse({ ...base, reason }).success).toBe(true);
    expect(WhyResponse.safeParse({ ...base, reason: 'because' }).success).toBe(false);
  });
});
