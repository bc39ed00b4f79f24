import { describe, expect, it } from 'vitest';
import { lastSecondAtOrAbove } from '@rampart/scoring';
import type { DeliveredEntry, Ipv4DecisionRow } from '../../store/index.ts';
import type { Ipv4Policy } from '../ipv4/policy.ts';
import { filterEntries, goDuration, listedEntries, listedUntil, lookupMatches, MAX_DURATION_SECONDS, needsResend, sendTerms, streamStep, type ListedEntry } from './bouncers.ts';

const NOW = 1_900_000_000;
const NOW_MS = NOW * 1000 + 250;
const policy: Ipv4Policy = { orgId: 1, reserved: [], ranges: [], rule: null };
const row = (over: Partial<Ipv4DecisionRow>): Ipv4DecisionRow => ({ id: 1, network: '45.77.1.1/32', score: 300, ts: NOW - 100, sources: ['ssh_log'], tags: [], decision: null, ttl: null, ...over });
const entry = (network: string, until: number, over: Partial<ListedEntry> = {}): ListedEntry => ({ id: 7, network, until, rank: 100, scenario: 'rampart/ssh_log', ...over });
const held = (network: string, keptUntil: number): DeliveredEntry => ({ network, indicatorId: 7, keptUntil, scenario: 'rampart/ssh_log' });

describe('goDuration', () => {
  it("writes whole seconds as Go's Duration.String does", () => {
    expect([0, 5, 65, 3600, 133_925, MAX_DURATION_SECONDS].map(goDuration)).toEqual(['0s', '5s', '1m5s', '1h0m0s', '37h12m5s', '596h31m22s']);
  });
});

describe('listedUntil', () => {
  it('ends a score-listed row when its live score falls below the threshold', () => {
    const end = NOW - 100 + lastSecondAtOrAbove(300, 50) + 1;
    expect(listedUntil(row({}), policy, 50, NOW)).toEqual({ until: end, byDecision: false });
  });
  it('ends a blacklisted row at the later of its ttl and its score end; never without a ttl', () => {
    const scoreEnd = NOW - 100 + lastSecondAtOrAbove(300, 50) + 1;
    expect(listedUntil(row({ decision: 1, ttl: scoreEnd + 10 }), policy, 50, NOW)).toEqual({ until: scoreEnd + 10, byDecision: true });
    expect(listedUntil(row({ decision: 1, ttl: NOW + 10 }), policy, 50, NOW)).toEqual({ until: scoreEnd, byDecision: true });
    expect(listedUntil(row({ decision: 1, ttl: null, score: 0 }), policy, 50, NOW).until).toBe(Infinity);
  });
  it('extends to the blocking rule while it holds', () => {
    const rule: Ipv4Policy = { ...policy, rule: { score: 10, tags: ['ssh_log'] } };
    const ruleEnd = NOW - 100 + lastSecondAtOrAbove(300, 10) + 1;
    expect(listedUntil(row({}), rule, 50, NOW)).toEqual({ until: ruleEnd, byDecision: true });
  });
});

describe('listedEntries', () => {
  it('keeps maximum_rules entries: blacklists first, then the highest live scores, then the lowest network', () => {
    const rows = [
      row({ id: 1, network: '45.77.1.9/32', score: 900 }),
      row({ id: 2, network: '45.77.1.3/32', score: 50, decision: 1, ttl: null }),
      row({ id: 3, network: '45.77.1.2/32', score: 400 }),
      row({ id: 4, network: '45.77.1.1/32', score: 400 }),
    ];
    expect(listedEntries(rows, policy, 20, NOW, 3).map((e) => e.network)).toEqual(['45.77.1.3/32', '45.77.1.9/32', '45.77.1.1/32']);
    expect(listedEntries(rows, policy, 20, NOW, 10)).toHaveLength(4);
    expect(listedEntries([row({ sources: [] , decision: 1, ttl: null })], policy, 20, NOW, 10)[0]!.scenario).toBe('rampart/blacklist');
    expect(listedEntries([row({ sources: [] })], policy, 20, NOW, 10)[0]!.scenario).toBe('rampart/score');
  });
});

describe('sendTerms and needsResend', () => {
  it('rounds the duration up so that the kernel keeps the entry at least until Rampart stops listing it', () => {
    expect(sendTerms(NOW + 100, NOW_MS)).toEqual({ seconds: 100, keptUntil: NOW + 100 });
    expect(sendTerms(NOW + 1, NOW_MS + 900)).toEqual({ seconds: 1, keptUntil: NOW + 1 });
    expect(sendTerms(Infinity, NOW_MS)).toEqual({ seconds: MAX_DURATION_SECONDS, keptUntil: NOW + MAX_DURATION_SECONDS });
  });
  it('resends when the listing outlasts the kernel, or when a capped duration is half gone', () => {
    expect(needsResend(NOW + 100, NOW + 100, NOW_MS)).toBe(false);
    expect(needsResend(NOW + 100, NOW + 50, NOW_MS)).toBe(false);
    expect(needsResend(NOW + 100, NOW + 101, NOW_MS)).toBe(true);
    expect(needsResend(NOW + MAX_DURATION_SECONDS, Infinity, NOW_MS)).toBe(false);
    expect(needsResend(NOW + 1000, Infinity, NOW_MS)).toBe(true);
  });
});

describe('streamStep', () => {
  const current = [entry('45.77.1.1/32', NOW + 100), entry('45.78.0.0/24', NOW + 200)];
  it('sends everything on start-up, and withdraws what the key was sent before', () => {
    const { change, answer } = streamStep([held('45.77.1.9/32', NOW + 5)], current, NOW_MS, true);
    expect(answer.new.map((d) => [d.value, d.scope, d.duration])).toEqual([
      ['45.77.1.1', 'Ip', '1m40s'],
      ['45.78.0.0/24', 'Range', '3m20s'],
    ]);
    expect(answer.deleted.map((d) => [d.value, d.duration])).toEqual([['45.77.1.9', '0s']]);
    expect(change).toEqual({ replace: true, remove: [], upsert: [held('45.77.1.1/32', NOW + 100), held('45.78.0.0/24', NOW + 200)] });
  });
  it('sends only changes afterwards: new entries, withdrawn entries, and extended ones in both lists', () => {
    const delivered = [held('45.77.1.1/32', NOW + 50), held('45.78.0.0/24', NOW + 200), held('45.77.1.9/32', NOW + 5)];
    const next = [...current, entry('45.79.0.1/32', NOW + 60)];
    const { change, answer } = streamStep(delivered, next, NOW_MS, false);
    expect(answer.deleted.map((d) => d.value)).toEqual(['45.77.1.1', '45.77.1.9']);
    expect(answer.new.map((d) => [d.value, d.duration])).toEqual([
      ['45.77.1.1', '1m40s'],
      ['45.79.0.1', '1m0s'],
    ]);
    expect(change).toEqual({ replace: false, remove: ['45.77.1.9/32'], upsert: [held('45.77.1.1/32', NOW + 100), held('45.79.0.1/32', NOW + 60)] });
    expect(streamStep(change.upsert.concat(held('45.78.0.0/24', NOW + 200)), next, NOW_MS, false).answer).toEqual({ new: [], deleted: [] });
  });  it('does not delete an entry whose kernel timeout has run out: the set no longer holds it', () => {
    // 45.77.1.8 ended at its duration (NOW - 1, or NOW itself); 45.77.1.9 was cleared before its duration ran out.
    const delivered = [held('45.77.1.8/32', NOW - 1), held('45.77.1.7/32', NOW), held('45.77.1.9/32', NOW + 5)];
    const { change, answer } = streamStep(delivered, [], NOW_MS, false);
    expect(answer).toEqual({ new: [], deleted: [expect.objectContaining({ value: '45.77.1.9' })] });
    expect(change.remove).toEqual(['45.77.1.8/32', '45.77.1.7/32', '45.77.1.9/32']);
  });
});

describe('filters', () => {
  const entries = [entry('45.77.1.1/32', NOW + 1), entry('45.78.0.0/24', NOW + 1, { scenario: 'rampart/blacklist+waf_log' })];
  it('keeps scopes, origins and scenario words as LAPI does', () => {
    expect(filterEntries(entries, { scopes: 'Range' }).map((e) => e.network)).toEqual(['45.78.0.0/24']);
    expect(filterEntries(entries, { scopes: 'ip,range', origins: 'cscli,RAMPART' })).toHaveLength(2);
    expect(filterEntries(entries, { origins: 'crowdsec' })).toEqual([]);
    expect(filterEntries(entries, { scenarios_containing: 'WAF' }).map((e) => e.network)).toEqual(['45.78.0.0/24']);
    expect(filterEntries(entries, { scenarios_not_containing: 'waf, ssh' })).toEqual([]);
  });
  it('matches look-ups by address, range (containing or contained), scope, value and type', () => {
    const [ip, range] = entries as [ListedEntry, ListedEntry];
    const q = (over: Record<string, string>) => ({ contains: 'true' as const, ...over });
    expect(lookupMatches(range, q({ ip: '45.78.0.9' }))).toBe(true);
    expect(lookupMatches(ip, q({ ip: '45.78.0.9' }))).toBe(false);
    expect(lookupMatches(range, q({ range: '45.78.0.0/25' }))).toBe(true);
    expect(lookupMatches(range, q({ range: '45.78.0.0/16' }))).toBe(false);
    expect(lookupMatches(range, { contains: 'false', range: '45.78.0.0/16' })).toBe(true);
    expect(lookupMatches(ip, q({ value: '45.77.1.1', scope: 'ip', type: 'BAN' }))).toBe(true);
    expect(lookupMatches(ip, q({ value: '45.77.1.1/32' }))).toBe(true);
    expect(lookupMatches(ip, q({ type: 'captcha' }))).toBe(false);
    expect(lookupMatches(ip, q({ scope: 'range' }))).toBe(false);
  });
});
