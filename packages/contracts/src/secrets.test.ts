import { describe, expect, it } from 'vitest';
import { AGENT_CONFIG_SECRET_KEYS, AgentConfig, SECRET_MASK, maskSecrets, mergeMaskedSecrets } from './index.ts';
import { sampleAgentConfig } from './fixtures.ts';

describe('secrets of the agent configuration', () => {
  it('lists every secret field of spec 2.11', () => {
    expect([...AGENT_CONFIG_SECRET_KEYS].sort()).toEqual(
      ['api_jwt_key', 'cdn_waf_x_auth_key', 'password', 'private_key', 'router_password', 'secretAccessKey'].sort(),
    );
  });

  it('masks every set secret at any depth and nothing else', () => {
    const masked = maskSecrets(sampleAgentConfig);
    expect(masked.api_jwt_key).toBe(SECRET_MASK);
    expect(masked.ips.firewall_mgmt_a).toEqual({ ...sampleAgentConfig.ips.firewall_mgmt_a, password: SECRET_MASK });
    expect(masked.ips.router_a.router_password).toBe(SECRET_MASK);
    expect(masked.ips.cloud_a).toEqual({ ...sampleAgentConfig.ips.cloud_a, secretAccessKey: SECRET_MASK });
    expect(masked.ips.endpoint_d.private_key).toBe(SECRET_MASK);
    expect(masked.ids.cdn_waf.cdn_waf_x_auth_key).toBe(SECRET_MASK);
    expect(masked.gaid).toBe(sampleAgentConfig.gaid);
    expect(JSON.stringify(masked)).not.toMatch(/-pass|cdn-key|cloud-secret|PRIVATE KEY|eyJ/);
    expect(AgentConfig.parse(masked)).toEqual(masked);
  });

  it('leaves unset secrets unset and does not touch its input', () => {
    const doc = { api_jwt_key: null, ips: { csv: { password: '' }, list: [{ password: 'p' }] } };
    const snapshot = structuredClone(doc);
    expect(maskSecrets(doc)).toEqual({ api_jwt_key: null, ips: { csv: { password: '' }, list: [{ password: SECRET_MASK }] } });
    expect(doc).toEqual(snapshot);
  });

  it('round-trip: a masked document written back keeps the stored secrets', () => {
    expect(mergeMaskedSecrets(maskSecrets(sampleAgentConfig), sampleAgentConfig)).toEqual(sampleAgentConfig);
  });

  it('a new secret replaces the stored one; other changes go through', () => {
    const incoming = maskSecrets(sampleAgentConfig);
    incoming.ips.router_a.router_password = 'new-router-pass';
    incoming.score_threshold = 700;
    const merged = mergeMaskedSecrets(incoming, sampleAgentConfig);
    expect(merged).toEqual({
      ...sampleAgentConfig,
      score_threshold: 700,
      ips: { ...sampleAgentConfig.ips, router_a: { ...sampleAgentConfig.ips.router_a, router_password: 'new-router-pass' } },
    });
  });

  it('a mask with nothing stored is dropped instead of becoming the secret', () => {
    expect(mergeMaskedSecrets({ ips: { x: { active: true, password: SECRET_MASK } } }, {})).toEqual({ ips: { x: { active: true } } });
  });

  it('the mask in a non-secret field is ordinary text', () => {
    expect(mergeMaskedSecrets({ notes: SECRET_MASK }, { notes: 'old' })).toEqual({ notes: SECRET_MASK });
  });
});
