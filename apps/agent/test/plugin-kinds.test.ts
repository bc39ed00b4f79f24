import { describe, expect, it } from 'vitest';
import { AgentSettingsDocument } from '@rampart/contracts';
import { sampleAgentConfig } from '@rampart/contracts/fixtures';
import { planPlugins } from '../src/config/plugins.ts';
import { REGISTRY } from '../src/registry.ts';
import { LocalOptions } from '../src/config/schema.ts';

describe('enforcers by kind', () => {
  const settings = (ips: Record<string, unknown>) => AgentSettingsDocument.parse({ ...sampleAgentConfig, ids: {}, ips });

  it('plans one slot per (ips label, kind) the entry turns on; IPv4 alone by default', () => {
    const { plan, problems } = planPlugins(
      settings({
        dry_run: { active: true, path: '/tmp/d.json', kinds: { domain: { path: '/tmp/d-domains.json' }, file: { path: '/tmp/d-files.json' } } },
        csv: { active: true, csv_logs: '/tmp/a.csv', csv_reload_command: '' },
      }),
      REGISTRY,
      { enforcers: { csv: { kinds: { url: { path: '/tmp/u.csv' } } } } },
    );
    expect(problems).toEqual([]);
    expect(plan.enforcers.map((e) => [e.label, e.kind])).toEqual([
      ['csv', 'ipv4'],
      ['csv/url', 'url'],
      ['dry_run', 'ipv4'],
      ['dry_run/domain', 'domain'],
      ['dry_run/file', 'file'],
    ]);
  });

  it('plans endpoint_d (OpenDXL TIE) for file digests only, reported as endpoint_d/file', () => {
    const endpoint = { active: true, api: 'dxl.example.org:8883', fileslist_file: '/tmp/tie.txt', broker_ca_bundle: '/tmp/ca.pem', cert_file: '/tmp/c.pem', private_key: '/tmp/c.key' };
    const { plan, problems } = planPlugins(settings({ endpoint_d: endpoint }), REGISTRY);
    expect(problems).toEqual([]);
    expect(plan.enforcers.map((e) => [e.label, e.kind])).toEqual([['endpoint_d/file', 'file']]);
    const missing = planPlugins(settings({ endpoint_d: { ...endpoint, cert_file: '' } }), REGISTRY);
    expect(missing.problems.map((p) => p.path)).toEqual(['ips.endpoint_d.cert_file']);
  });

  it('names a bad kind entry at its path', () => {
    const { problems } = planPlugins(settings({ dry_run: { active: true, path: '/tmp/d.json', kinds: { domain: { path: '/tmp/d.json' }, ipv6: { path: '/x' } } } }), REGISTRY);
    expect(problems.map((p) => p.path).sort()).toEqual(['ips.dry_run.kinds', 'ips.dry_run.kinds']);
  });

  it('validates the never-block lists of domains, URLs and digests', () => {
    const ok = LocalOptions.parse({ allow_domains: ['Bücher.example'], allow_urls: ['https://partner.example/api/'], allow_digests: ['a'.repeat(64)] });
    expect(ok.allow_domains).toEqual(['Bücher.example']);
    const bad = LocalOptions.safeParse({ allow_domains: ['localhost'], allow_urls: ['file:///etc'], allow_digests: ['xyz'] });
    expect(bad.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['allow_domains.0', 'not a domain name'],
      ['allow_urls.0', 'not an http, https or ftp URL'],
      ['allow_digests.0', 'not an MD5, SHA1 or SHA256 hex digest'],
    ]);
  });
});
