import { describe, expect, it } from 'vitest';
import { OrganizationConfig, OrganizationConfigUpdate, organizationForAgents } from './index.ts';

const ok = (value: unknown) => OrganizationConfig.safeParse(value).success;

const DEFAULT_LIVE = {
  index_name: 'poc_traffic',
  score_name: 'score',
  elastic_url: 'default',
  action_name: 'action',
  date_time_name: '@timestamp',
  allow_value: ['Allow'],
  deny_value: ['Deny'],
  low_score: [1, 60],
  medium_score: [60, 120],
  high_score: [120, 150],
  critical_score: [150, 1000],
  device_name: ['firewall'],
  direction_name: ['direction'],
  service_name: ['service'],
};

describe('organization configuration (spec 2.12)', () => {
  it('an empty document gets every default of the table', () => {
    // agent_defaults is beyond the table (issue 37): the console's default for new agents.
    expect(OrganizationConfig.parse({})).toEqual({ live: DEFAULT_LIVE, reserved_ips: [], agent_defaults: { score_threshold: 150 } });
    expect(OrganizationConfig.parse({ live: { index_name: 'traffic' } }).live).toEqual({ ...DEFAULT_LIVE, index_name: 'traffic' });
  });

  it('parses a complete document unchanged', () => {
    const doc = {
      live: { ...DEFAULT_LIVE, elastic_url: 'https://search.example.org:9200', low_score: [1, 50] },
      reserved_ips: ['192.0.2.0/24', '198.51.100.7'],
      blocking_roule: { score: 300, tags: ['botnet', 'scanner'] },
      agent_defaults: { score_threshold: 420 },
    };
    expect(OrganizationConfig.parse(doc)).toEqual(doc);
    // What agents are sent leaves it out (an agent built before it would refuse it), and parses back to the default.
    const { agent_defaults: _console, ...forAgents } = doc;
    expect(organizationForAgents(OrganizationConfig.parse(doc))).toEqual(forAgents);
    expect(OrganizationConfig.parse(organizationForAgents(OrganizationConfig.parse(doc))).agent_defaults).toEqual({ score_threshold: 150 });
  });

  it('reserved_ips are IPv4 addresses or CIDR networks', () => {
    expect(ok({ reserved_ips: ['10.0.0.0/8'] })).toBe(true);
    expect(ok({ reserved_ips: ['10.0.0.0/33'] })).toBe(false);
    expect(ok({ reserved_ips: ['example.com'] })).toBe(false);
    expect(ok({ reserved_ips: ['2001:db8::/32'] })).toBe(false);
  });

  it('bands are [min, max] pairs within 0..1000 with min <= max', () => {
    expect(ok({ live: { low_score: [1, 60, 90] } })).toBe(false);
    expect(ok({ live: { low_score: [60, 1] } })).toBe(false);
    expect(ok({ live: { critical_score: [150, 1001] } })).toBe(false);
    expect(OrganizationConfig.parse({ live: { low_score: ['1', '70'] } }).live.low_score).toEqual([1, 70]);
  });

  it('blocking_roule needs score and unique tags', () => {
    expect(ok({ blocking_roule: { score: 300 } })).toBe(false);
    expect(ok({ blocking_roule: { score: 300, tags: ['a', 'a'] } })).toBe(false);
    expect(ok({ blocking_roule: { score: 1001, tags: ['a'] } })).toBe(false);
    expect(OrganizationConfig.parse({ blocking_roule: { score: '300', tags: ['a'] } }).blocking_roule).toEqual({ score: 300, tags: ['a'] });
  });

  it('is strict', () => {
    expect(ok({ blocking_rule: { score: 1, tags: [] } })).toBe(false);
    expect(ok({ live: { index: 'x' } })).toBe(false);
  });

  it('an update may have touching bands but not overlapping ones; a stored document is read as it is', () => {
    const live = { low_score: [1, 60], medium_score: [55, 120], high_score: [120, 150], critical_score: [150, 1000] };
    const bad = OrganizationConfigUpdate.safeParse({ live });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['live.medium_score', 'overlaps low_score [1, 60]: medium_score must start at 60 or above']]);
    expect(ok({ live })).toBe(true);
    expect(OrganizationConfigUpdate.safeParse({}).success).toBe(true);
  });
});
