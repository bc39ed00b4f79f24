import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentFileConfig } from '../config/load.ts';
import { validateAgentText } from '../config/read.ts';
import type { Registry } from '../registry.ts';
import { registerAgent } from './register.ts';

/*
 * `rampart-agent install`: the layout of apps/agent/README.md under --root (default /) and
 * --prefix (default /usr), from the running bundle (or one built from the sources), the
 * packaging files beside it, a configuration that validates as written, `systemctl
 * daemon-reload` where systemd runs, and registration when given a server and an admin key.
 * Existing agent.json and agent.env are kept (they hold this host's choices and secrets).
 */

export interface InstallOptions {
  root: string;
  prefix: string;
  /** Control-plane API base written to a new agent.json, and registered with. */
  server?: string;
  gaid?: string;
  /** The node binary the wrapper and the unit run (default: the one running this). */
  node: string;
  adminKey?: string;
  adminKeyEnv: string;
  env: Record<string, string | undefined>;
  registry: Registry;
  /**
   * URL of the CLI module that runs: in the bundle, its entry file (this module is in a chunk
   * beside it), whose chunks and packaging are copied; from the sources, a bundle is built.
   */
  cli?: string;
}

export const PACKAGING_DIR = 'rampart-agent-packaging';
const CHUNKS_DIR = 'rampart-agent-chunks';

/** `RMP-AGENT-ID-` and this host's name in letters and digits (the id allows nothing else). */
export function defaultGaid(host = hostname()): string {
  return `RMP-AGENT-ID-${host.replace(/[^A-Za-z0-9]/g, '') || 'agent'}`;
}

/** The bundle to install and the packaging files: the running bundle, else one built from the sources. */
async function sources(log: (line: string) => void, cli: string = import.meta.url): Promise<{ bundle: string; packaging: string; cleanup(): Promise<void> }> {
  const here = fileURLToPath(cli);
  if (here.endsWith('.mjs')) return { bundle: here, packaging: join(dirname(here), PACKAGING_DIR), cleanup: async () => {} };
  const tmp = await mkdtemp(join(tmpdir(), 'rampart-agent-install-'));
  const out = join(tmp, 'rampart-agent.mjs');
  log('building the bundle from the sources (scripts/bundle.mjs)');
  const built = spawnSync(process.execPath, [fileURLToPath(new URL('../../scripts/bundle.mjs', import.meta.url)), out], { encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`bundle build failed: ${built.stderr}`);
  return { bundle: out, packaging: join(tmp, PACKAGING_DIR), cleanup: () => rm(tmp, { recursive: true, force: true }) };
}

const rootPath = (root: string, path: string) => join(root, path);

async function put(path: string, content: string | Buffer, mode: number, log: (line: string) => void, shown: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  await writeFile(path, content);
  await chmod(path, mode);
  log(`wrote ${shown} (${mode.toString(8).padStart(4, '0')})`);
}

async function copyTree(from: string, to: string, shownTo: string, log: (line: string) => void): Promise<void> {
  if (!existsSync(from)) return;
  await mkdir(to, { recursive: true, mode: 0o755 });
  await chmod(to, 0o755);
  const names = (await readdir(from)).sort();
  for (const name of names) {
    await copyFile(join(from, name), join(to, name));
    await chmod(join(to, name), 0o644);
  }
  log(`wrote ${shownTo}/ (${names.length} files, 0644)`);
}

/** The unit with the paths of this installation instead of /usr/bin/node and /usr/lib/rampart-agent. */
export function unitFor(unit: string, prefix: string, node: string): string {
  return unit.replaceAll('/usr/bin/node', node).replaceAll('/usr/lib/rampart-agent/', `${join(prefix, 'lib/rampart-agent')}/`);
}

function hasUser(name: string): boolean {
  return spawnSync('id', ['-u', name], { stdio: 'ignore' }).status === 0;
}

export async function installAgent(o: InstallOptions, log: (line: string) => void): Promise<number> {
  const onHost = o.root === '/';
  const lib = join(o.prefix, 'lib/rampart-agent');
  const src = await sources(log, o.cli);
  try {
    await put(rootPath(o.root, join(lib, 'rampart-agent.mjs')), await readFile(src.bundle), 0o644, log, join(lib, 'rampart-agent.mjs'));
    await copyTree(join(dirname(src.bundle), CHUNKS_DIR), rootPath(o.root, join(lib, CHUNKS_DIR)), join(lib, CHUNKS_DIR), log);
    await copyTree(src.packaging, rootPath(o.root, join(lib, PACKAGING_DIR)), join(lib, PACKAGING_DIR), log);
    const wrapper = wrapperScript(o.node, join(lib, 'rampart-agent.mjs'));
    await put(rootPath(o.root, join(o.prefix, 'bin/rampart-agent')), wrapper, 0o755, log, join(o.prefix, 'bin/rampart-agent'));
    const unit = unitFor(await readFile(join(src.packaging, 'rampart-agent.service'), 'utf8'), o.prefix, o.node);
    await put(rootPath(o.root, '/etc/systemd/system/rampart-agent.service'), unit, 0o644, log, '/etc/systemd/system/rampart-agent.service');

    const etc = rootPath(o.root, '/etc/rampart-agent');
    await mkdir(etc, { recursive: true, mode: 0o750 });
    await chmod(etc, 0o750);
    const envFile = join(etc, 'agent.env');
    if (existsSync(envFile)) log('kept /etc/rampart-agent/agent.env (exists)');
    else await put(envFile, await readFile(join(src.packaging, 'agent.env.example')), 0o600, log, '/etc/rampart-agent/agent.env');
    const configFile = join(etc, 'agent.json');
    if (existsSync(configFile)) log('kept /etc/rampart-agent/agent.json (exists)');
    else {
      const sample = JSON.parse(await readFile(join(src.packaging, 'agent.json.example'), 'utf8')) as Record<string, unknown>;
      const config = { ...sample, ...(o.server ? { control_plane_url: o.server } : {}), gaid: o.gaid ?? defaultGaid() };
      await put(configFile, `${JSON.stringify(config, null, 2)}\n`, 0o640, log, '/etc/rampart-agent/agent.json');
    }
    const configText = await readFile(configFile, 'utf8');
    const { config, problems } = validateAgentText(configText, o.env, o.registry);
    if (!config) {
      log(`/etc/rampart-agent/agent.json: ${problems.length} problem(s): ${problems.map((p) => `${p.path || '(root)'}: ${p.message}`).join('; ')}`);
      return 1;
    }
    log(`/etc/rampart-agent/agent.json: valid (agent ${config.settings.gaid})`);
    const stateDir = rootPath(o.root, config.local.state_dir);
    await mkdir(dirname(stateDir), { recursive: true, mode: 0o755 });
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    await chmod(stateDir, 0o700);
    log(`state directory ${config.local.state_dir} (0700)`);

    // The service user, and the group that may read the configuration.
    if (onHost && process.getuid?.() === 0) {
      if (!hasUser('rampart-agent')) {
        const r = spawnSync('useradd', ['--system', '--home', '/var/lib/rampart-agent', '--shell', '/usr/sbin/nologin', 'rampart-agent'], { encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`useradd rampart-agent failed: ${r.stderr.trim()}`);
        log('created system user rampart-agent');
      }
      const gid = Number(spawnSync('id', ['-g', 'rampart-agent'], { encoding: 'utf8' }).stdout.trim());
      await chown(etc, 0, gid);
      await chown(configFile, 0, gid);
      log('/etc/rampart-agent and agent.json: group rampart-agent');
    } else log(`not root on /: skipped creating user rampart-agent and giving it /etc/rampart-agent (useradd --system rampart-agent; chgrp rampart-agent /etc/rampart-agent /etc/rampart-agent/agent.json)`);

    if (!onHost) log(`--root ${o.root}: skipped systemctl daemon-reload (run it on the system that boots this root)`);
    else if (!existsSync('/run/systemd/system')) log('systemd is not running here: skipped systemctl daemon-reload (start the agent another way, or on a systemd host)');
    else {
      const r = spawnSync('systemctl', ['daemon-reload'], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`systemctl daemon-reload failed: ${r.stderr.trim()}`);
      log('ran systemctl daemon-reload; start with: systemctl enable --now rampart-agent');
    }

    if (!o.server) log(`not registered: pass --server <url> with ${o.adminKeyEnv} set, or run rampart-agent register later`);
    else if (!o.adminKey) log(`not registered: set ${o.adminKeyEnv} to an organization admin API key, then run rampart-agent register`);
    else {
      const target: AgentFileConfig = { ...config, controlPlaneUrl: o.server, local: { ...config.local, state_dir: stateDir } };
      await registerAgent(target, { adminKey: o.adminKey, issueToken: true }, log);
    }
  } finally {
    await src.cleanup();
  }
  return 0;
}

/**
 * The `rampart-agent` command placed in `<prefix>/bin` (the systemd unit runs node with its own
 * flags). A small young generation, old-generation growth of 50% over the live data instead of
 * V8's up to 4x, and one malloc arena keep `rampart-agent parse` on a 1,000,000-line auth.log
 * under 80 MB of peak RSS (bench/parse.ts) at a few percent of its speed.
 */
export function wrapperScript(node: string, bundle: string): string {
  return `#!/bin/sh\nexport MALLOC_ARENA_MAX="\${MALLOC_ARENA_MAX:-1}"\nexec ${node} --max-semi-space-size=1 --heap-growing-percent=50 ${bundle} "$@"\n`;
}
