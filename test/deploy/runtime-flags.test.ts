import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The server runs with the same Node flags and malloc settings wherever it starts in production
 * (apps/server/runtime.json): a start site that drifted would run with V8's default 16 MB
 * semi-spaces and glibc's arena per thread, 30-40 MB more than docs/operations.md says.
 */
const repo = join(import.meta.dirname, '..', '..');
const read = (p: string) => readFileSync(join(repo, p), 'utf8');
const runtime = JSON.parse(read('apps/server/runtime.json')) as { nodeArgs: string[]; env: Record<string, string> };
const envText = Object.entries(runtime.env).map(([k, v]) => `${k}=${v}`).join(' ');
const scripts = (p: string) => (JSON.parse(read(p)) as { scripts: Record<string, string> }).scripts;

describe('the server runtime settings (apps/server/runtime.json)', () => {
  it('are what the settings are: young generation and malloc arenas capped', () => {
    expect(runtime.nodeArgs).toEqual(['--max-semi-space-size=2']);
    expect(runtime.env).toEqual({ MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_TRIM_THRESHOLD_: '131072' });
  });

  it('npm start (root and server package) runs the bundle with them', () => {
    expect(scripts('package.json').start).toBe(`node apps/server/scripts/build.mjs && exec env ${envText} node ${runtime.nodeArgs.join(' ')} apps/server/dist/main.mjs`);
    expect(scripts('apps/server/package.json').start).toBe(`exec env ${envText} node ${runtime.nodeArgs.join(' ')} dist/main.mjs`);
  });

  it('the Dockerfile and the systemd unit run the bundle with them', () => {
    const docker = read('Dockerfile');
    expect(docker).toContain(`ENV ${envText}\nCMD ${JSON.stringify(['node', ...runtime.nodeArgs, 'apps/server/dist/main.mjs']).replaceAll(',', ', ')}`);
    const unit = read('deploy/systemd/rampart-server@.service');
    expect(unit).toContain(`Environment=${envText}\nExecStart=/usr/bin/node ${runtime.nodeArgs.join(' ')} /opt/rampart/apps/server/dist/main.mjs`);
  });
});
