import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The packaged form (one bundled module, no tsx) must build and run the same commands.
describe('bundled agent', () => {
  let dir: string;
  let bundle: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agent-bundle-'));
    bundle = join(dir, 'rampart-agent.mjs');
    const built = spawnSync(process.execPath, [fileURLToPath(new URL('../scripts/bundle.mjs', import.meta.url)), bundle], { encoding: 'utf8' });
    expect(built.stderr).toBe('');
    expect(built.status).toBe(0);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('prints its version and validates a configuration', async () => {
    expect(spawnSync(process.execPath, [bundle, '--version'], { encoding: 'utf8' }).stdout).toBe('v0.1.0\n');
    const config = join(dir, 'agent.json');
    await writeFile(
      config,
      JSON.stringify({
        control_plane_url: 'http://127.0.0.1:1/api/v1',
        gaid: 'RMP-AGENT-ID-bundle',
        ts: 1,
        score_threshold: 100,
        start_from: 0,
        version: 'v0.1.0',
        proxy: 'LOCAL',
        sync_time: 5,
        maximum_rules: 100,
        ids: { ssh_log: { active: true, ssh_log_location: '/var/log/auth.log' } },
        ips: { dry_run: { active: true, path: '/tmp/dry.json' } },
      }),
    );
    const r = spawnSync(process.execPath, [bundle, 'validate-config', config], { encoding: 'utf8' });
    expect(r.stdout).toBe(`${config}: valid (agent RMP-AGENT-ID-bundle; sources: ssh_log; enforcers: dry_run)\n`);
    expect(r.status).toBe(0);
  });
});
