import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AGENT_CONFIG_SECRET_KEYS,
  AgentConfig,
  PLUGIN_SECRET_KEYS,
  SECRET_KEYS,
  SECRET_MASK,
  composedOf,
  isLogSecret,
  isSecretName,
  maskSecrets,
  mergeMaskedSecrets,
  redactLogSecrets,
  redactSecrets,
  secret,
  secretKeysOf,
} from './index.ts';
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

describe('one source of secret names (issue 34)', () => {
  it("is the platform's secrets and every plugin's, in any case, and anything named like a secret", () => {
    for (const name of ['api_token', 'private_key_passphrase', 'ssh_password', 'Password', 'PASSWORD', 'api_jwt_key', 'SecretAccessKey', 'client_secret', 'bearer_token', 'X-Api-Key']) expect([name, isSecretName(name)]).toEqual([name, true]);
    for (const name of ['gaid', 'username', 'accessKeyId', 'auth_name', 'cdn_waf_x_auth_email', 'address', 'command', 'passthrough_mode', 'credit_tokens', 'token_id']) expect([name, isSecretName(name)]).toEqual([name, false]);
    expect(SECRET_KEYS).toEqual([...new Set([...AGENT_CONFIG_SECRET_KEYS, ...PLUGIN_SECRET_KEYS])].sort());
  });

  it('masks every part of a settings document: plugin options, other cases, unknown integration labels', () => {
    const doc = {
      gaid: 'RMP-GAID-1',
      ips: {
        cdn_waf: { active: true, cdn_waf_x_auth_email: 'a@example.org', cdn_waf_x_auth_key: 'k1', options: { api_token: 'cf-token' } },
        router_a: { active: true, router_password: 'r1', options: { private_key_passphrase: 'pp' } },
        vendor_x: { active: true, Password: 'P1', PASSWORD: 'P2', nested: { client_secret: 'cs', user: 'u' } },
      },
    };
    const masked = maskSecrets(doc);
    expect(masked).toEqual({
      gaid: 'RMP-GAID-1',
      ips: {
        cdn_waf: { active: true, cdn_waf_x_auth_email: 'a@example.org', cdn_waf_x_auth_key: SECRET_MASK, options: { api_token: SECRET_MASK } },
        router_a: { active: true, router_password: SECRET_MASK, options: { private_key_passphrase: SECRET_MASK } },
        vendor_x: { active: true, Password: SECRET_MASK, PASSWORD: SECRET_MASK, nested: { client_secret: SECRET_MASK, user: 'u' } },
      },
    });
    // Written back masked, every one keeps its stored value.
    expect(mergeMaskedSecrets(masked, doc)).toEqual(doc);
  });

  it('redacts log lines: Error properties, JSON inside strings, credential headers at any depth and in any case', () => {
    const err = Object.assign(new Error('request failed: {"user":"u","Password":"hunter2","n":1}'), { config: { api_token: 'cfg-tok-value' }, PASSWORD: 'p' });
    const line = redactLogSecrets(
      {
        err,
        body: '{"api_token": "abc", "ok": true}',
        options: { headers: { Authorization: 'Bearer x', Cookie: 's=1', 'X-API-KEY': 'k', accept: 'json' } },
        apiToken: 'camel',
      },
      isLogSecret,
      'R',
    );
    const errProps = Object.fromEntries(Object.getOwnPropertyNames(line.err).map((n) => [n, (line.err as unknown as Record<string, unknown>)[n]]));
    const text = JSON.stringify({ line, errProps });
    for (const leak of ['hunter2', 'cfg-tok-value', '"p"', 'abc', 'Bearer x', 's=1', '"k"', 'camel']) expect([leak, text.includes(leak)]).toEqual([leak, false]);
    expect(line.err).toBeInstanceOf(Error);
    expect(line.err.message).toBe('request failed: {"user":"u","Password":"R","n":1}');
    expect(line.body).toBe('{"api_token": "R", "ok": true}');
    expect(line.options.headers).toEqual({ Authorization: 'R', Cookie: 'R', 'X-API-KEY': 'R', accept: 'json' });
    // The logged Error itself is untouched.
    expect((err as unknown as { config: { api_token: string } }).config.api_token).toBe('cfg-tok-value');
  });
});
