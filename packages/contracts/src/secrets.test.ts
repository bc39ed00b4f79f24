import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AGENT_CONFIG_SECRET_KEYS, AgentConfig, SECRET_MASK, composedOf, maskSecrets, mergeMaskedSecrets, redactSecrets, secret, secretKeysOf } from './index.ts';
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

describe('secrets declared in schemas', () => {
  const Plugin = z.strictObject({
    active: z.boolean(),
    options: z
      .strictObject({ vault: z.array(z.record(z.string(), z.strictObject({ vault_pin: secret(z.string().min(4)).optional() }))).default([]) })
      .prefault({}),
  });

  it('derives the secret names from the schemas, through wrappers, arrays, records, unions and declared parts', () => {
    expect(secretKeysOf(Plugin)).toEqual(['vault_pin']);
    const opaque = composedOf(
      z.unknown().transform((v) => v),
      [Plugin],
    );
    expect(secretKeysOf(opaque, z.union([z.object({ a: secret(z.string()) }), z.null()]))).toEqual(['a', 'vault_pin']);
  });

  it('redacts a secret nested at any depth, in arrays, and survives cycles', () => {
    const keys = new Set(secretKeysOf(AgentConfig, Plugin));
    const cyclic: Record<string, unknown> = { name: 'c' };
    cyclic.self = cyclic;
    const logged = { settings: { a: { b: { c: { d: { password: 'p4', list: [{ vault_pin: '1234' }, { vault_pin: '' }] } } } } }, cyclic };
    expect(redactSecrets(logged, keys, '[redacted]')).toEqual({
      settings: { a: { b: { c: { d: { password: '[redacted]', list: [{ vault_pin: '[redacted]' }, { vault_pin: '' }] } } } } },
      cyclic: { name: 'c', self: '[Circular]' },
    });
    expect(logged.settings.a.b.c.d.password).toBe('p4');
  });

  it('redacts an object shared by two branches in both, without calling it circular', () => {
    const shared = { a: { b: { c: { password: 'p' } } } };
    expect(redactSecrets({ left: shared, right: [shared] }, new Set(AGENT_CONFIG_SECRET_KEYS), 'x')).toEqual({
      left: { a: { b: { c: { password: 'x' } } } },
      right: [{ a: { b: { c: { password: 'x' } } } }],
    });
  });

  it('returns what holds no secret unchanged, without copying', () => {
    const doc = { a: { b: [{ c: 1 }] }, when: new Date(0) };
    expect(redactSecrets(doc, new Set(AGENT_CONFIG_SECRET_KEYS))).toBe(doc);
  });
});
