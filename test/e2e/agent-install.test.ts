import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import { seedOrg } from '@rampart/server/testing';
import { startControlPlane, tempDir, type ControlPlane } from './support.ts';

/*
 * `rampart-agent install` from the bundle into a clean root directory (no systemd there, not
 * root): every file's content and mode, a configuration that validates as written, registration
 * against a real server, and `register`/`install` run again never leaving a second live key.
 */

const agentDir = fileURLToPath(new URL('../../apps/agent/', import.meta.url));
const packaging = (name: string) => readFileSync(join(agentDir, 'packaging', name));
const mode = (path: string) => (statSync(path).mode & 0o7777).toString(8).padStart(4, '0');
/** The LICENSE of the official Node.js package beside the binary running this (copied with it). */
const nodeLicense = join(dirname(dirname(process.execPath)), 'LICENSE');

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  // Only PATH from this environment: the agent sees no RAMPART_* or DATABASE_URL left over.
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out, err })));
}

describe('rampart-agent install into a clean root', { timeout: 180_000 }, () => {
  let cp: ControlPlane;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let bundle: string;
  let root: string;
  let admin: RampartClient;
  let adminKey: string;
  const gaid = 'RMP-AGENT-ID-install1';
  const liveKeys = async () => (await admin.agentTokens(gaid)).filter((t) => !t.revoked).map((t) => t.token_id);

  beforeAll(async () => {
    dir = await tempDir('rampart-install-');
    bundle = join(dir.path, 'dist', 'rampart-agent.mjs');
    const built = spawnSync(process.execPath, [join(agentDir, 'scripts/bundle.mjs'), bundle], { encoding: 'utf8' });
    expect(built.stderr).toBe('');
    root = join(dir.path, 'root');
    cp = await startControlPlane();
    const org = await seedOrg(cp.store, { credits: 1000 });
    adminKey = org.keys.admin;
    admin = new RampartClient({ baseUrl: cp.url, apiKey: adminKey });
  }, 180_000);
  afterAll(async () => {
    await cp?.close();
    await dir?.remove();
  });

  it('places every file with its mode, validates the sample as written and registers', async () => {
    const r = await run([bundle, 'install', '--root', root, '--server', cp.url, '--gaid', gaid], { RAMPART_ADMIN_KEY: adminKey });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const chunks = readdirSync(join(dir.path, 'dist', 'rampart-agent-chunks')).sort();
    const [tokenId] = await liveKeys();
    expect(r.out).toBe(
      [
        'wrote /usr/lib/rampart-agent/rampart-agent.mjs (0644)',
        `wrote /usr/lib/rampart-agent/rampart-agent-chunks/ (${chunks.length} files, 0644)`,
        // packaging/ and its fail2ban/ folder (README.md, action.d/rampart.conf, the rampart-fail2ban helper).
        'wrote /usr/lib/rampart-agent/rampart-agent-packaging/ (6 files, 0644, 1 executable 0755)',
        `wrote /usr/lib/rampart-agent/node/bin/node (0755, Node.js ${process.versions.node})`,
        ...(existsSync(nodeLicense) ? ['wrote /usr/lib/rampart-agent/node/LICENSE (0644)'] : []),
        'wrote /usr/bin/rampart-agent (0755)',
        'wrote /etc/systemd/system/rampart-agent.service (0644)',
        'wrote /etc/rampart-agent/agent.env (0600)',
        'wrote /etc/rampart-agent/agent.json (0640)',
        `/etc/rampart-agent/agent.json: valid (agent ${gaid})`,
        'state directory /var/lib/rampart-agent (0700)',
        'not root on /: skipped creating user rampart-agent and giving it /etc/rampart-agent (useradd --system rampart-agent; chgrp rampart-agent /etc/rampart-agent /etc/rampart-agent/agent.json)',
        `--root ${root}: skipped systemctl daemon-reload (run it on the system that boots this root)`,
        `registered ${gaid}: agent created successfully`,
        `agent key ${tokenId} saved to ${root}/var/lib/rampart-agent/credentials.json (send in header Authorization)`,
        '',
      ].join('\n'),
    );

    const lib = join(root, 'usr/lib/rampart-agent');
    expect(readFileSync(join(lib, 'rampart-agent.mjs')).equals(readFileSync(bundle))).toBe(true);
    expect(mode(join(lib, 'rampart-agent.mjs'))).toBe('0644');
    expect(readdirSync(join(lib, 'rampart-agent-chunks')).sort()).toEqual(chunks);
    for (const c of chunks) {
      expect(readFileSync(join(lib, 'rampart-agent-chunks', c)).equals(readFileSync(join(dir.path, 'dist', 'rampart-agent-chunks', c)))).toBe(true);
      expect(mode(join(lib, 'rampart-agent-chunks', c))).toBe('0644');
    }
    for (const f of ['agent.env.example', 'agent.json.example', 'rampart-agent.service']) {
      expect(readFileSync(join(lib, 'rampart-agent-packaging', f)).equals(packaging(f))).toBe(true);
      expect(mode(join(lib, 'rampart-agent-packaging', f))).toBe('0644');
    }
    expect(mode(join(lib, 'rampart-agent-packaging', 'fail2ban', 'rampart-fail2ban'))).toBe('0755');
    expect(mode(join(lib, 'rampart-agent-packaging', 'fail2ban', 'action.d', 'rampart.conf'))).toBe('0644');
    // The runtime is a copy of the Node.js that ran install: nothing points back at this machine.
    expect(readFileSync(join(lib, 'node/bin/node')).equals(readFileSync(process.execPath))).toBe(true);
    expect(mode(join(lib, 'node/bin/node'))).toBe('0755');
    expect(readFileSync(join(root, 'usr/bin/rampart-agent'), 'utf8')).toBe(
      '#!/bin/sh\nexport MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-1}"\nexec /usr/lib/rampart-agent/node/bin/node --max-semi-space-size=1 --heap-growing-percent=50 /usr/lib/rampart-agent/rampart-agent.mjs "$@"\n',
    );
    expect(mode(join(root, 'usr/bin/rampart-agent'))).toBe('0755');
    // With /usr the unit is the packaged one, byte for byte.
    expect(readFileSync(join(root, 'etc/systemd/system/rampart-agent.service')).equals(packaging('rampart-agent.service'))).toBe(true);
    expect(mode(join(root, 'etc/systemd/system/rampart-agent.service'))).toBe('0644');
    expect(mode(join(root, 'etc/rampart-agent'))).toBe('0750');
    expect(readFileSync(join(root, 'etc/rampart-agent/agent.env')).equals(packaging('agent.env.example'))).toBe(true);
    expect(mode(join(root, 'etc/rampart-agent/agent.env'))).toBe('0600');
    const sample = JSON.parse(packaging('agent.json.example').toString('utf8')) as Record<string, unknown>;
    expect(readFileSync(join(root, 'etc/rampart-agent/agent.json'), 'utf8')).toBe(`${JSON.stringify({ ...sample, control_plane_url: cp.url, gaid }, null, 2)}\n`);
    expect(mode(join(root, 'etc/rampart-agent/agent.json'))).toBe('0640');
    expect(mode(join(root, 'var/lib'))).toBe('0755');
    expect(mode(join(root, 'var/lib/rampart-agent'))).toBe('0700');
    const credentials = join(root, 'var/lib/rampart-agent/credentials.json');
    expect(mode(credentials)).toBe('0600');
    expect(JSON.parse(readFileSync(credentials, 'utf8'))).toMatchObject({ gaid, header: 'Authorization', token_id: tokenId });
    expect(readdirSync(join(root, 'var/lib/rampart-agent'))).toEqual(['credentials.json']);

    // The installed program validates the installed configuration with nothing in its environment.
    const valid = await run([join(lib, 'rampart-agent.mjs'), 'validate-config', join(root, 'etc/rampart-agent/agent.json')]);
    expect(valid).toEqual({ code: 0, out: `${join(root, 'etc/rampart-agent/agent.json')}: valid (agent ${gaid}; sources: ssh_log; enforcers: packet_filter)\n`, err: '' });
  });

  it('run again, keeps the files and the live key; refuses a second key it cannot see unless --rotate', async () => {
    const [held] = await liveKeys();
    const again = await run([bundle, 'install', '--root', root, '--server', cp.url, '--gaid', gaid], { RAMPART_ADMIN_KEY: adminKey });
    expect(again.code, again.err).toBe(0);
    const lines = again.out.split('\n');
    expect(lines).toContain('kept /etc/rampart-agent/agent.env (exists)');
    expect(lines).toContain('kept /etc/rampart-agent/agent.json (exists)');
    expect(lines.slice(-3)).toEqual([`${gaid} is already registered`, `agent key ${held} in ${root}/var/lib/rampart-agent/credentials.json is still valid: kept (--rotate replaces it)`, '']);
    expect(await liveKeys()).toEqual([held]);

    // This host lost its key (a reinstalled machine): no silent second key.
    await rm(join(root, 'var/lib/rampart-agent/credentials.json'));
    const refused = await run([bundle, 'install', '--root', root, '--server', cp.url], { RAMPART_ADMIN_KEY: adminKey });
    expect(refused.code).toBe(3);
    expect(refused.err).toBe(
      `install: ${gaid} already has a live agent key (${held}) that this host does not hold: not issuing another. ` +
        'Run `register --rotate` to issue a new key and revoke those, or revoke them first (DELETE /agents/{agid}/tokens/{token_id})\n',
    );
    expect(await liveKeys()).toEqual([held]);

    // register --rotate: a new key saved here, the old one revoked.
    const config = JSON.parse(readFileSync(join(root, 'etc/rampart-agent/agent.json'), 'utf8')) as { local: Record<string, unknown> };
    const local = join(dir.path, 'agent.json');
    await writeFile(local, JSON.stringify({ ...config, local: { ...config.local, state_dir: join(root, 'var/lib/rampart-agent') } }));
    const rotated = await run([bundle, 'register', '-c', local, '--rotate'], { RAMPART_ADMIN_KEY: adminKey });
    expect(rotated.code, rotated.err).toBe(0);
    const [fresh] = await liveKeys();
    expect(fresh).not.toBe(held);
    expect(rotated.out).toBe(
      `${gaid} is already registered\nagent key ${fresh} saved to ${root}/var/lib/rampart-agent/credentials.json (send in header Authorization)\nrevoked agent key ${held}\n`,
    );
    expect(await liveKeys()).toEqual([fresh]);
  });

  it('puts the paths of another prefix and node in the wrapper and the unit', async () => {
    const other = join(dir.path, 'opt-root');
    const r = await run([bundle, 'install', '--root', other, '--prefix', '/opt/rampart', '--gaid', 'RMP-AGENT-ID-opt']);
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n').at(-2)).toBe('not registered: pass --server <url> with RAMPART_ADMIN_KEY set, or run rampart-agent register later');
    expect(readFileSync(join(other, 'opt/rampart/bin/rampart-agent'), 'utf8')).toBe(
      '#!/bin/sh\nexport MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-1}"\nexec /opt/rampart/lib/rampart-agent/node/bin/node --max-semi-space-size=1 --heap-growing-percent=50 /opt/rampart/lib/rampart-agent/rampart-agent.mjs "$@"\n',
    );
    const unit = readFileSync(join(other, 'etc/systemd/system/rampart-agent.service'), 'utf8');
    expect(unit).toBe(
      packaging('rampart-agent.service')
        .toString('utf8')
        .replace(
          'ExecStart=/usr/lib/rampart-agent/node/bin/node --expose-gc --max-semi-space-size=1 --max-old-space-size=256 /usr/lib/rampart-agent/rampart-agent.mjs run',
          'ExecStart=/opt/rampart/lib/rampart-agent/node/bin/node --expose-gc --max-semi-space-size=1 --max-old-space-size=256 /opt/rampart/lib/rampart-agent/rampart-agent.mjs run',
        ),
    );
    expect(unit).not.toContain('/usr/lib/rampart-agent/');
  });
});
