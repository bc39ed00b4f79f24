import { describe, expect, it } from 'vitest';
import { CrowdsecDecisions, CrowdsecStreamQuery, CrowdsecUsageMetrics, nestsDeeperThan, USAGE_METRICS_MAX_DEPTH } from './crowdsec.ts';

describe('CrowdSec contracts', () => {
  it('measures nesting without recursion', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(nestsDeeperThan(deep, 50)).toBe(true);
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
    expect(nestsDeeperThan('text', 0)).toBe(false);
  });
  it('takes a usage-metrics body as sent, within its depth', () => {
    const body = { remediation_components: [{ type: 'crowdsec-firewall-bouncer', metrics: [{ items: [{ name: 'dropped', value: 3 }] }] }], extra: true };
    expect(CrowdsecUsageMetrics.parse(body)).toEqual(body);
    let deep: unknown = [];
    for (let i = 0; i < USAGE_METRICS_MAX_DEPTH; i++) deep = [deep];
    expect(CrowdsecUsageMetrics.safeParse({ remediation_components: [{ metrics: deep }] }).success).toBe(false);
  });
  it("defaults startup to false and answers an empty look-up with LAPI's null", () => {
    expect(CrowdsecStreamQuery.parse({}).startup).toBe('false');
    expect(CrowdsecStreamQuery.safeParse({ startup: 'yes' }).success).toBe(false);
    expect(CrowdsecDecisions.parse(null)).toBeNull();
  });
});
