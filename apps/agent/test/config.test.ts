import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAgentFile } from '../src/config/load.ts';
import { validateAgentText } from '../src/config/read.ts';
import { planPlugins } from '../src/config/plugins.ts';
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
      ips: { dry_run: { active: true }, tarpit: { active: true }, csv: { active: false } },
      local: { allow_list: ['not-an-ip', '198.51.100.0/24', '010.0.0.1', '10.0.0.0/08', '2001:db8::/32'], metrics_port: 70000 },
    };
    const first = validateAgentText(JSON.stringify(bad), {}, REGISTRY);
    expect(first.problems.map((p) => p.path).sort()).toEqual(['api_jwt_key', 'control_plane_url', 'control_plane_url', 'local.allow_list.0', 'local.allow_list.2', 'local.allow_list.3', 'local.metrics_port', 'proxy', 'score_threshold']);
    // Plugin entries are checked once the document itself is valid.
    const second = validateAgentText(JSON.stringify({ ...base, ids: bad.ids, ips: bad.ips }), { AGENT_KEY: 'k' }, REGISTRY);
    expect(second.problems.map((p) => p.path).sort()).toEqual(['ids.honeypot', 'ids.ssh_log.ssh_log_location', 'ips.dry_run.path', 'ips.tarpit']);
    expect(second.problems.find((p) => p.path === 'ips.tarpit')?.message).toMatch(/^no enforcer for 'tarpit'; known enforcers: .*dry_run/);
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

  it('merges local.enforcers.<label> (or options written in the ips entry) into the entry and lists option problems with their paths', () => {
    const ips = {
      packet_filter: { active: true, acl: '', reload_command: '' },
      csv: { active: true, csv_logs: '/var/lib/rampart-agent/list.csv', csv_reload_command: '' },
    };
    const enforcers = { packet_filter: { backend: 'nftables', table: 'edge', netns: 'fw' }, csv: { max_entries: 500 } };
    const good = validateAgentText(JSON.stringify({ ...base, ips, local: { enforcers } }), { AGENT_KEY: 'k' }, REGISTRY);
    expect(good.problems).toEqual([]);
    expect(good.config?.local.enforcers).toEqual(enforcers);
    expect(good.config?.local.reconcile_seconds).toBe(60);

    // Written inside the ips entry: moved to local.enforcers, the entry keeps only the document's fields.
    const inline = { ...ips, csv: { ...ips.csv, options: { max_entries: 7 } } };
    const moved = validateAgentText(JSON.stringify({ ...base, ips: inline, local: {} }), { AGENT_KEY: 'k' }, REGISTRY);
    expect(moved.problems).toEqual([]);
    expect(moved.config?.settings.ips?.csv).toEqual(ips.csv);
    expect(moved.config?.local.enforcers).toEqual({ csv: { max_entries: 7 } });

    const bad = {
      packet_filter: { backend: 'nftables', table: '1bad', priority: 9000 },
      csv: { max_entries: 0 },
    };
    const refused = validateAgentText(JSON.stringify({ ...base, ips, local: { enforcers: bad } }), { AGENT_KEY: 'k' }, REGISTRY);
    expect(refused.problems.map((p) => p.path).sort()).toEqual(['ips.csv.options.max_entries', 'ips.packet_filter.options.priority', 'ips.packet_filter.options.table']);
    const unknownBackend = validateAgentText(JSON.stringify({ ...base, ips, local: { enforcers: { packet_filter: { backend: 'pfsense' } } } }), { AGENT_KEY: 'k' }, REGISTRY);
    expect(unknownBackend.problems).toEqual([{ path: 'ips.packet_filter.options.backend', message: 'unknown backend; known: ipset, nftables' }]);
    const ipset = validateAgentText(JSON.stringify({ ...base, ips, local: { enforcers: { packet_filter: { backend: 'ipset', table: 'x' } } } }), { AGENT_KEY: 'k' }, REGISTRY);
    expect(ipset.problems).toEqual([{ path: 'ips.packet_filter.options', message: 'Unrecognized key: "table"' }]);
  });

  it('routes router_a by options.dialect: RouterOS by default, Cisco IOS when asked, an unknown dialect named', () => {
    const pin = `SHA256:${'A'.repeat(43)}`;
    const ips = { router_a: { active: true, router_host: '192.0.2.1', router_user: 'rampart', router_password: 'pw' } };
    const check = (options: Record<string, unknown>) =>
      validateAgentText(JSON.stringify({ ...base, ips, local: { enforcers: { router_a: { host_key_sha256: pin, ...options } } } }), { AGENT_KEY: 'k' }, REGISTRY).problems;
    expect(check({})).toEqual([]);
    expect(check({ dialect: 'ios', mode: 'standard', standard_acl: 12 })).toEqual([]);
    // list_name is RouterOS's, mode is IOS's: each dialect refuses the other's options.
    expect(check({ dialect: 'ios', list_name: 'x' })).toEqual([{ path: 'ips.router_a.options', message: 'Unrecognized key: "list_name"' }]);
    expect(check({ mode: 'standard' })).toEqual([{ path: 'ips.router_a.options', message: 'Unrecognized key: "mode"' }]);
    expect(check({ dialect: 'nxos' })).toEqual([{ path: 'ips.router_a.options.dialect', message: 'unknown dialect; known: ios, routeros' }]);
  });

  it('routes dns_e by options.dialect: a BIND zone file by default, Infoblox WAPI when asked; domains either way', () => {
    const ips = { dns_e: { active: true, domains_file: '/tmp/rpz.zone', api: 'https://gm.example.org/wapi/v2.12', username: 'u', password: 'p', policy: 'rpz.example.org' } };
    const plan = (options: Record<string, unknown>) => {
      const settings = { ...base, ips };
      const { config, problems } = validateAgentText(JSON.stringify({ ...settings, local: { enforcers: { dns_e: options } } }), { AGENT_KEY: 'k' }, REGISTRY);
      if (problems.length) return problems;
      return planPlugins(config!.settings, REGISTRY, config!.local).plan.enforcers.map((e) => `${e.label}:${(e.config as { backend: string }).backend}`);
    };
    expect(plan({})).toEqual(['dns_e/domain:bind']);
    expect(plan({ dialect: 'infoblox', tls_fingerprint_sha256: 'ab'.repeat(32) })).toEqual(['dns_e/domain:infoblox']);
    expect(plan({ dialect: 'infoblox', zone: 'rpz.local' })).toEqual([{ path: 'ips.dns_e.options', message: 'Unrecognized key: "zone"' }]);
    expect(plan({ dialect: 'powerdns' })).toEqual([{ path: 'ips.dns_e.options.dialect', message: 'unknown dialect; known: bind, infoblox' }]);
  });

  it('registers every enforcer under the ips label it serves', () => {
    expect([...REGISTRY.enforcers.keys()].sort()).toEqual(['bridge_filter', 'cdn_waf', 'cloud_a', 'csp', 'csv', 'dns_e', 'dry_run', 'endpoint_d', 'firewall_accel_a', 'firewall_b', 'firewall_c', 'firewall_mgmt_a', 'packet_filter', 'pf_list', 'proxy_f', 'proxy_lb', 'router_a', 'waf', 'web_server_list']);
    expect(Object.fromEntries([...REGISTRY.enforcers].map(([label, d]) => [label, d.name]))).toEqual({
      bridge_filter: 'nftables-bridge',
      cdn_waf: 'cloudflare',
      cloud_a: 'aws',
      csp: 'feed-server',
      csv: 'csv',
      dns_e: 'bind|infoblox',
      dry_run: 'dry-run',
      endpoint_d: 'opendxl-tie',
      firewall_accel_a: 'checkpoint-securexl',
      firewall_b: 'feed-server',
      firewall_c: 'cisco-asa',
      firewall_mgmt_a: 'checkpoint-mgmt',
      packet_filter: 'nftables|ipset',
      pf_list: 'pf',
      proxy_f: 'squid',
      proxy_lb: 'haproxy',
      router_a: 'routeros|ios',
      waf: 'modsecurity',
      web_server_list: 'nginx',
    });
  });

  it('the packaged example configuration is valid as written (no environment) and enforces with packet_filter on nftables', () => {
    const text = readFileSync(new URL('../packaging/agent.json.example', import.meta.url), 'utf8');
    // It used to name ${RAMPART_AGENT_KEY}, unset on a new host: the key comes from `register`.
    const { config, problems } = validateAgentText(text, {}, REGISTRY);
    expect(problems).toEqual([]);
    expect(config?.local.enforcers.packet_filter).toEqual({ backend: 'nftables', table: 'rampart', priority: -10, capacity: 1_000_000 });
    expect(config?.local.reconcile_seconds).toBe(60);
    expect(config?.local.allow_domains).toEqual(['example.org']);
    expect(config!.settings.ips?.['dry_run']).toMatchObject({
      kinds: {
        domain: { path: '/var/lib/rampart-agent/dry-run-domains.json' },
        url: { path: '/var/lib/rampart-agent/dry-run-urls.json' },
        file: { path: '/var/lib/rampart-agent/dry-run-files.json' },
      },
    });
  });

  it('reports JSON errors and non-objects instead of throwing', () => {
    expect(parseAgentFile('{', {}).problems[0]?.message).toMatch(/^not JSON/);
    expect(parseAgentFile('[]', {}).problems).toEqual([{ path: '', message: 'must be a JSON object' }]);
  });

  it('names the known plugins when a name is unknown', () => {
    expect(() => findEnforcer('nope')).toThrow(UnknownPluginError);
    expect(() => findEnforcer('nope')).toThrow("no enforcer for 'nope'; known enforcers: bridge_filter, cdn_waf, cloud_a, csp, csv, dns_e, dry_run, endpoint_d, firewall_accel_a, firewall_b, firewall_c, firewall_mgmt_a, packet_filter, pf_list, proxy_f, proxy_lb, router_a, waf, web_server_list");
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
