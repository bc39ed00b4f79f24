import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SECRET_KEYS, isSecretName, secret } from '@rampart/contracts';
import { defineSource } from '@rampart/plugin-kit';
import { runCli, type CliIo } from '../src/cli.ts';
import { REGISTRY, secretKeysOfRegistry, type Registry } from '../src/registry.ts';
import { createLogger } from '../src/runtime/logger.ts';

/*
 * Secrets are declared in the schemas only: a plugin whose option schema marks a field secret()
 * gets it masked by print-config and redacted from the log, at any depth, with no list naming it.
 */
const vaultSource = defineSource({
  name: 'vault',
  serves: 'json_source',
  configSchema: z.looseObject({
    active: z.boolean(),
    options: z
      .strictObject({
        vault: z.strictObject({ layer: z.strictObject({ pins: z.array(z.strictObject({ name: z.string(), unlock_pin: secret(z.string().min(4)) })) }) }).optional(),
      })
      .prefault({}),
  }),
  createParser: () => ({ push: () => [], flush: () => [] }),
  start: (_config, _mode, ctx) => ({ done: new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve())) }),
});
const registry: Registry = { sources: new Map([['json_source', vaultSource]]), enforcers: REGISTRY.enforcers };

function sink() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { stream, text: () => lines.join(''), records: () => lines.join('').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('agent secrets declared in the schemas', () => {
  it("derives the secret names from the settings document's schema and every plugin's, through a backend switch", () => {
    expect(secretKeysOfRegistry()).toEqual(['api_jwt_key', 'api_token', 'cdn_waf_x_auth_key', 'password', 'private_key', 'private_key_passphrase', 'router_password', 'secretAccessKey', 'ssh_password']);
    expect(secretKeysOfRegistry(registry)).toContain('unlock_pin');
  });

  it('redacts a plugin-declared secret and a settings secret five levels deep in a logged object', () => {
    const out = sink();
    const log = createLogger('info', out.stream, secretKeysOfRegistry(registry));
    const settings = { local: { sources: { json_source: { options: { vault: { layer: { pins: [{ name: 'p1', unlock_pin: 'pin-1234' }] } } } } } } };
    log.info({ settings, previous: { a: { b: { c: { d: { router_password: 'deep-router' } } } } } }, 'settings changed');
    expect(out.text()).not.toMatch(/pin-1234|deep-router/);
    const [entry] = out.records();
    expect(entry!.settings).toEqual({ local: { sources: { json_source: { options: { vault: { layer: { pins: [{ name: 'p1', unlock_pin: '[redacted]' }] } } } } } } });
    expect(entry!.previous).toEqual({ a: { b: { c: { d: { router_password: '[redacted]' } } } } });
  });

  it("redacts the built-in plugins' secrets at any depth with the default logger", () => {
    const out = sink();
    createLogger('info', out.stream).warn({ plan: { enforcers: [{ label: 'cdn_waf', config: { options: { api_token: 'cf-token', account_id: 'x' } } }] } }, 'plan');
    expect(out.text()).not.toContain('cf-token');
    expect(out.records()[0]!.plan).toEqual({ enforcers: [{ label: 'cdn_waf', config: { options: { api_token: '[redacted]', account_id: 'x' } } }] });
  });

  describe('print-config', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'agent-secrets-'));
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));

    it('masks a plugin option declared secret, nested deep, that no list names', async () => {
      const file = join(dir, 'vault.json');
      const pins = [
        { name: 'p1', unlock_pin: 'pin-1234' },
        { name: 'p2', unlock_pin: 'pin-5678' },
      ];
      await writeFile(
        file,
        JSON.stringify({
          control_plane_url: 'http://127.0.0.1:1/api/v1',
          gaid: 'RMP-AGENT-ID-sec1',
          ts: 1,
          score_threshold: 100,
          start_from: 0,
          version: 'v0.1.0',
          proxy: 'CLOUD',
          sync_time: 1,
          maximum_rules: 10,
          api_jwt_key: 'jwt-secret-value',
          ids: { json_source: { active: true, json: [] } },
          ips: { dry_run: { active: true, path: join(dir, 'x.json') } },
          local: { state_dir: join(dir, 'state'), sources: { json_source: { vault: { layer: { pins } } } } },
        }),
      );
      const out: string[] = [];
      const err: string[] = [];
      const io: CliIo = { out: (t) => void out.push(t), err: (t) => void err.push(t), env: {} };
      expect(await runCli(['print-config', '-c', file], io, registry)).toBe(0);
      expect(err.join('')).toBe('');
      const text = out.join('');
      expect(text).not.toMatch(/pin-1234|pin-5678|jwt-secret-value/);
      const printed = JSON.parse(text) as { api_jwt_key: string; local: { sources: { json_source: unknown } } };
      expect(printed.api_jwt_key).toBe('********');
      expect(printed.local.sources.json_source).toEqual({
        vault: {
          layer: {
            pins: [
              { name: 'p1', unlock_pin: '********' },
              { name: 'p2', unlock_pin: '********' },
            ],
          },
        },
      });
    });
  });
});

describe('the control plane knows every secret the plugins declare', () => {
  it("SECRET_KEYS (contracts, what the server masks and redacts) holds every secret() field of every registered plugin", () => {
    const known = new Set(SECRET_KEYS.map((k) => k.toLowerCase()));
    expect(secretKeysOfRegistry().filter((k) => !known.has(k.toLowerCase()))).toEqual([]);
    for (const k of secretKeysOfRegistry()) expect([k, isSecretName(k)]).toEqual([k, true]);
  });
});
