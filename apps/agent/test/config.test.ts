import { describe, expect, it } from 'vitest';
import { parseAgentFile } from '../src/config/load.ts';
import { validateAgentText } from '../src/config/read.ts';
import { REGISTRY, UnknownPluginError, findEnforcer } from '../src/registry.ts';
import { cronForMinutes } from '../src/runtime/scheduler.ts';

const base = {
  control_plane_url: 'https://rampart.example.org/api/v1',
  gaid: 'RMP-AGENT-ID-edge01',
  ts: 1763900000000,
  score_threshold: 120,
  start_from: 0,
  version: 'v0.1.0',
  proxy: 'LOCAL',
  sync_time: 5,
  maximum_rules: 1000,
  api_jwt_key: '${AGENT_KEY}',
  ids: { ssh_log: { active: true, ssh_log_location: '/var/log/auth.log' } },
  ips: { dry_run: { active: true, path: '/var/lib/rampart-agent/dry-run.json' } },
  local: { allow_list: ['198.51.100.0/24'], sources: { ssh_log: { mode: 'aggressive', max_retry: 3 } } },
};

describe('agent configuration', () => {
  it('parses the 2.11 document plus control_plane_url and local, expanding ${ENV} secrets', () => {
    const { config, problems } = validateAgentText(JSON.stringify(base), { AGENT_KEY: 'secret-token' }, REGISTRY);
    expect(problems).toEqual([]);
    expect(config?.settings.api_jwt_key).toBe('secret-token');
    expect(config?.settings.running).toBe('yes');
    expect(config?.controlPlaneUrl).toBe('https://rampart.example.org/api/v1');
    expect(config?.local).toMatchObject({ state_dir: '/var/lib/rampart-agent', metrics_port: 9464, allow_list: ['198.51.100.0/24'], force_sync: false });
  });

  it('lists every problem at once: schema, env, local options and plugin entries', () => {
    const bad = {
      ...base,
      control_plane_url: 'ftp://nope',
      score_threshold: 5000,
      proxy: 'MAYBE',
      ids: { ssh_log: { active: true, ssh_log_location: '' }, honeypot: { active: true } },
      ips: { dry_run: { active: true }, firewall_mgmt_a: { active: true }, csv: { active: false } },
      local: { allow_list: ['not-an-ip'], metrics_port: 70000 },
    };
    const first = validateAgentText(JSON.stringify(bad), {}, REGISTRY);
    expect(first.problems.map((p) => p.path).sort()).toEqual(['api_jwt_key', 'control_plane_url', 'control_plane_url', 'local.allow_list.0', 'local.metrics_port', 'proxy', 'score_threshold']);
    // Plugin entries are checked once the document itself is valid.
    const second = validateAgentText(JSON.stringify({ ...base, ids: bad.ids, ips: bad.ips }), { AGENT_KEY: 'k' }, REGISTRY);
    expect(second.problems.map((p) => p.path).sort()).toEqual(['ids.honeypot', 'ids.ssh_log.ssh_log_location', 'ips.dry_run.path', 'ips.firewall_mgmt_a']);
    expect(second.problems.find((p) => p.path === 'ips.firewall_mgmt_a')?.message).toMatch(/^no enforcer for 'firewall_mgmt_a'; known enforcers: .*dry_run/);
  });

  it('accepts source options inside the ids entry and moves them to local.sources', () => {
    const doc = { ...base, ids: { ssh_log: { active: true, ssh_log_location: '/var/log/auth.log', options: { mode: 'aggressive', max_retry: 2 } } }, local: {} };
    const { config, problems } = validateAgentText(JSON.stringify(doc), { AGENT_KEY: 'k' }, REGISTRY);
    expect(problems).toEqual([]);
    expect(config?.settings.ids?.ssh_log).toEqual({ active: true, ssh_log_location: '/var/log/auth.log' });
    expect(config?.local.sources).toEqual({ ssh_log: { mode: 'aggressive', max_retry: 2 } });
    const bad = validateAgentText(JSON.stringify({ ...doc, ids: { ssh_log: { ...doc.ids.ssh_log, options: { mode: 'loud' } } } }), { AGENT_KEY: 'k' }, REGISTRY);
    expect(bad.problems.map((p) => p.path)).toEqual(['ids.ssh_log.options.mode']);
  });

  it('reports JSON errors and non-objects instead of throwing', () => {
    expect(parseAgentFile('{', {}).problems[0]?.message).toMatch(/^not JSON/);
    expect(parseAgentFile('[]', {}).problems).toEqual([{ path: '', message: 'must be a JSON object' }]);
  });

  it('names the known plugins when a name is unknown', () => {
    expect(() => findEnforcer('nope')).toThrow(UnknownPluginError);
    expect(() => findEnforcer('nope')).toThrow(/known enforcers: dry_run/);
  });

  it('derives a cron schedule from sync_time', () => {
    expect([1, 5, 59, 60, 90, 120, 1440, 5000].map(cronForMinutes)).toEqual([
      '*/1 * * * *',
      '*/5 * * * *',
      '*/59 * * * *',
      '0 */1 * * *',
      '0 */2 * * *',
      '0 */2 * * *',
      '0 0 * * *',
      '0 0 * * *',
    ]);
  });
});
