import { describe, expect, it } from 'vitest';
import {
  AgentConfig,
  AgentFeedbackBody,
  AgentIds,
  AgentIps,
  AgentRegisterResponse,
  AgentSettingsDocument,
  IDS_LABELS,
  IPS_LABELS,
} from './index.ts';
import { sampleAgentConfig, sampleIds, sampleIps } from './fixtures.ts';

const ok = (schema: { safeParse(v: unknown): { success: boolean } }, value: unknown) => schema.safeParse(value).success;

describe('agent configuration (spec 2.11)', () => {
  it('the sample covers every ids and ips entry of the specification', () => {
    expect(Object.keys(sampleIds).sort()).toEqual([...IDS_LABELS].sort());
    expect(Object.keys(sampleIps).sort()).toEqual([...IPS_LABELS].sort());
    expect(IDS_LABELS).toHaveLength(7);
    expect(IPS_LABELS).toHaveLength(18);
  });

  it('parses the full sample unchanged', () => {
    expect(AgentConfig.parse(sampleAgentConfig)).toEqual(sampleAgentConfig);
  });

  it('minimal config: only required fields', () => {
    const minimal = {
      gaid: 'RMP-AGENT-ID-abc123',
      ts: 1717171717000,
      score_threshold: 0,
      start_from: 0,
      version: 'v1',
      proxy: 'LOCAL',
      sync_time: 1,
      maximum_rules: 1,
    };
    expect(AgentConfig.parse(minimal)).toEqual(minimal);
    for (const key of Object.keys(minimal)) {
      const { [key]: _omitted, ...rest } = minimal as Record<string, unknown>;
      expect(ok(AgentConfig, rest), key).toBe(false);
    }
  });

  it('fills unset text settings with the empty placeholder', () => {
    const parsed = AgentConfig.parse({
      ...sampleAgentConfig,
      ids: { json_source: { active: true }, ssh_log: { active: true } },
      ips: { pf_list: { active: true }, proxy_f: { active: false } },
    });
    expect(parsed.ids).toEqual({ json_source: { active: true, json: [] }, ssh_log: { active: true, ssh_log_location: '' } });
    expect(parsed.ips?.pf_list).toEqual({ active: true, RMP_ips_txt: '', pflist_reload_command: '' });
    expect(parsed.ips?.proxy_f).toMatchObject({ parent: null, password: '', urls_file: '' });
  });

  it('known entries are strict; unknown entries are open with a boolean active', () => {
    expect(ok(AgentIps, { packet_filter: { active: true, acl: '/x', extra: 1 } })).toBe(false);
    expect(ok(AgentIps, { packet_filter: { acl: '/x' } })).toBe(false);
    expect(ok(AgentIds, { ssh_log: { active: 'yes' } })).toBe(false);
    const open = { future_system: { active: true, endpoint: 'https://x.example', retries: 3 } };
    expect(AgentIps.parse(open)).toEqual(open);
    expect(AgentIds.parse(open)).toEqual(open);
    expect(ok(AgentIps, { future_system: { endpoint: 'x' } })).toBe(false);
    expect(ok(AgentIps, { future_system: 'on' })).toBe(false);
  });

  it('the document keeps top-level keys it does not know (e.g. elk_link)', () => {
    expect(AgentConfig.parse({ ...sampleAgentConfig, elk_link: 'https://elk.example' })).toEqual({ ...sampleAgentConfig, elk_link: 'https://elk.example' });
  });

  it('gaid needs the agent prefix followed by letters and digits', () => {
    expect(ok(AgentConfig, { ...sampleAgentConfig, gaid: '4F2A9C7E1B' })).toBe(false);
    expect(ok(AgentConfig, { ...sampleAgentConfig, gaid: 'RMP-AGENT-ID-' })).toBe(false);
    expect(ok(AgentConfig, { ...sampleAgentConfig, gaid: 'RMP-AGENT-ID-ab-c' })).toBe(false);
    expect(ok(AgentConfig, { ...sampleAgentConfig, gaid: 'RMP-AGENT-ID-a' })).toBe(true);
  });

  it('numeric bounds', () => {
    const cases: [string, unknown, boolean][] = [
      ['score_threshold', -1, false],
      ['score_threshold', 0, true],
      ['score_threshold', 1000, true],
      ['score_threshold', 1001, false],
      ['score_threshold', 500.5, false],
      ['start_from', -1, false],
      ['start_from', 0, true],
      ['sync_time', 0, false],
      ['sync_time', 1, true],
      ['maximum_rules', 0, false],
      ['maximum_rules', 1, true],
      ['ts', -1, false],
      ['ts', 0, true],
      ['ts', null, false],
    ];
    for (const [key, value, valid] of cases) expect(ok(AgentConfig, { ...sampleAgentConfig, [key]: value }), `${key}=${String(value)}`).toBe(valid);
  });

  it('numbers may arrive as numeric strings', () => {
    const parsed = AgentConfig.parse({ ...sampleAgentConfig, score_threshold: '700', sync_time: '10' });
    expect(parsed.score_threshold).toBe(700);
    expect(parsed.sync_time).toBe(10);
  });

  it('version begins with v; proxy is CLOUD or LOCAL; URIs and header name are checked', () => {
    expect(ok(AgentConfig, { ...sampleAgentConfig, version: '3.2.1' })).toBe(false);
    expect(ok(AgentConfig, { ...sampleAgentConfig, proxy: 'cloud' })).toBe(false);
    expect(ok(AgentConfig, { ...sampleAgentConfig, api_url: 'not a uri' })).toBe(false);
    expect(ok(AgentConfig, { ...sampleAgentConfig, api_url: '' })).toBe(true);
    expect(ok(AgentConfig, { ...sampleAgentConfig, auth_name: 'X Auth' })).toBe(false);
    expect(ok(AgentConfig, { ...sampleAgentConfig, auth_name: 'X-Api-Key' })).toBe(true);
    expect(ok(AgentConfig, { ...sampleAgentConfig, api_jwt_key: null })).toBe(true);
    expect(ok(AgentConfig, { ...sampleAgentConfig, ips: { ...sampleIps, firewall_b: { ...sampleIps.firewall_b, updates: 'five' } } })).toBe(false);
  });
});

describe('agent settings document', () => {
  it('adds running, default yes', () => {
    expect(AgentSettingsDocument.parse(sampleAgentConfig)).toEqual({ ...sampleAgentConfig, running: 'yes' });
    expect(AgentSettingsDocument.parse({ ...sampleAgentConfig, running: 'no' }).running).toBe('no');
    expect(ok(AgentSettingsDocument, { ...sampleAgentConfig, running: 'paused' })).toBe(false);
    expect(AgentSettingsDocument.parse({ ...sampleAgentConfig, unknown: 1 })).toEqual({ ...sampleAgentConfig, running: 'yes', unknown: 1 });
  });
});

describe('agent messages', () => {
  it('register response', () => {
    const response = { success: true, message: 'agent created successfully', agent_id: sampleAgentConfig.gaid };
    expect(AgentRegisterResponse.parse(response)).toEqual(response);
  });

  it('feedback accepts a list or a count, a numeric or text code, and strips extras', () => {
    const feedback = {
      agid: sampleAgentConfig.gaid,
      plugin: 'packet_filter',
      hostname: 'fw-1',
      code: 0,
      score_threshold: 500,
      blacklist: ['203.0.113.7', '198.51.100.0/24'],
    };
    expect(AgentFeedbackBody.parse({ ...feedback, uptime: 12 })).toEqual(feedback);
    expect(AgentFeedbackBody.parse({ ...feedback, blacklist: 2, code: 'OK', score_threshold: '500' })).toEqual({
      ...feedback,
      blacklist: 2,
      code: 'OK',
    });
    expect(ok(AgentFeedbackBody, { ...feedback, agid: undefined })).toBe(false);
    expect(ok(AgentFeedbackBody, { ...feedback, blacklist: -1 })).toBe(false);
    expect(ok(AgentFeedbackBody, { ...feedback, blacklist: null })).toBe(false);
    expect(ok(AgentFeedbackBody, { ...feedback, score_threshold: 1001 })).toBe(false);
  });
});
