import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliIo } from '../src/cli.ts';

function io(env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const value: CliIo = { out: (t) => void out.push(t), err: (t) => void err.push(t), env };
  return { value, out: () => out.join(''), err: () => err.join('') };
}

describe('rampart-agent CLI', () => {
  let dir: string;
  const doc = {
    control_plane_url: 'http://127.0.0.1:1/api/v1',
    gaid: 'RMP-AGENT-ID-cli1',
    ts: 1,
    score_threshold: 100,
    start_from: 0,
    version: 'v0.1.0',
    proxy: 'CLOUD',
    sync_time: 1,
    maximum_rules: 10,
    api_jwt_key: '${KEY}',
    ips: { dry_run: { active: true, path: '/tmp/x.json' }, cdn_waf: { active: false, cdn_waf_x_auth_email: 'a@b.c', cdn_waf_x_auth_key: 'cf-secret' } },
  };
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agent-cli-'));
    await writeFile(join(dir, 'good.json'), JSON.stringify({ ...doc, local: { state_dir: join(dir, 'state') } }));
    await writeFile(join(dir, 'bad.json'), JSON.stringify({ ...doc, sync_time: 0, proxy: 'X', ips: { nft: { active: true } } }));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('validate-config: exit 0 with a summary for a valid file', async () => {
    const t = io({ KEY: 'k' });
    expect(await runCli(['validate-config', join(dir, 'good.json')], t.value)).toBe(0);
    expect(t.out()).toBe(`${join(dir, 'good.json')}: valid (agent RMP-AGENT-ID-cli1; sources: none; enforcers: dry_run)\n`);
  });

  it('validate-config: every problem listed, exit 1', async () => {
    const t = io();
    expect(await runCli(['validate-config', join(dir, 'bad.json')], t.value)).toBe(1);
    const lines = t.err().trim().split('\n');
    expect(lines[0]).toBe(`${join(dir, 'bad.json')}: 3 problems`);
    expect(lines.slice(1).map((l) => l.trim().split(':')[0]).sort()).toEqual(['api_jwt_key', 'proxy', 'sync_time']);
  });

  it('print-config: merged settings with every secret redacted', async () => {
    const t = io({ KEY: 'super-secret-jwt' });
    expect(await runCli(['print-config', '-c', join(dir, 'good.json')], t.value)).toBe(0);
    expect(t.out()).not.toContain('super-secret-jwt');
    expect(t.out()).not.toContain('cf-secret');
    const printed = JSON.parse(t.out()) as Record<string, unknown> & { ips: { cdn_waf: { cdn_waf_x_auth_key: string } } };
    expect(printed).toMatchObject({ api_jwt_key: '********', settings_origin: 'local', control_plane_url: 'http://127.0.0.1:1/api/v1' });
    expect(printed.ips.cdn_waf.cdn_waf_x_auth_key).toBe('********');
  });

  it('validate-config lists enforcer option problems with their paths; print-config masks secrets of plugin options', async () => {
    const ips = { ...doc.ips, cdn_waf: { active: true, cdn_waf_x_auth_email: '', cdn_waf_x_auth_key: '' } };
    const enforcers = { cdn_waf: { api_token: 'cf-token-secret', account_id: 'nope', zone_id: 'a'.repeat(32) } };
    await writeFile(join(dir, 'opts-bad.json'), JSON.stringify({ ...doc, ips, local: { state_dir: join(dir, 'state'), enforcers } }));
    const bad = io({ KEY: 'k' });
    expect(await runCli(['validate-config', join(dir, 'opts-bad.json')], bad.value)).toBe(1);
    expect(bad.err()).toBe(`${join(dir, 'opts-bad.json')}: 1 problem\n  ips.cdn_waf.options.account_id: a 32-character hex account id\n`);

    const good = { ...enforcers, cdn_waf: { ...enforcers.cdn_waf, account_id: 'b'.repeat(32) } };
    await writeFile(join(dir, 'opts-good.json'), JSON.stringify({ ...doc, ips, local: { state_dir: join(dir, 'state'), enforcers: good } }));
    const t = io({ KEY: 'k' });
    expect(await runCli(['print-config', '-c', join(dir, 'opts-good.json')], t.value)).toBe(0);
    expect(t.out()).not.toContain('cf-token-secret');
    expect((JSON.parse(t.out()) as { local: { enforcers: { cdn_waf: { api_token: string } } } }).local.enforcers.cdn_waf.api_token).toBe('********');
  });

  it('status: reads the state directory when no agent answers', async () => {
    const t = io({ KEY: 'k' });
    const file = join(dir, 'status.json');
    await writeFile(file, JSON.stringify({ ...doc, local: { state_dir: join(dir, 'state'), metrics_port: 1 } }));
    expect(await runCli(['status', '-c', file], t.value)).toBe(0);
    expect(JSON.parse(t.out())).toMatchObject({ from: 'state_dir', running_process: false, spool_depth: 0, feed_cursor: null });
  });

  it('register without an admin key says which variable to set', async () => {
    const t = io({ KEY: 'k' });
    expect(await runCli(['register', '-c', join(dir, 'good.json')], t.value)).toBe(2);
    expect(t.err()).toBe('register: set RAMPART_ADMIN_KEY to an organization admin API key\n');
  });

  it('an unknown command exits non-zero', async () => {
    const t = io();
    expect(await runCli(['frobnicate'], t.value)).not.toBe(0);
  });
});
