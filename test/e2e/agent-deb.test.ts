import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import { NetnsLab, systemGate } from '@rampart/plugin-kit/testing';
import { seedOrg } from '@rampart/server/testing';
import { startControlPlane, tempDir, waitFor, type ControlPlane } from './support.ts';

/*
 * Issue 31: the agent's .deb as a host runs it. `npm run package -w @rampart/agent` builds it;
 * `dpkg -i` installs it on this machine (the system user, /etc/rampart-agent, the state
 * directory); `systemd-analyze verify` checks the unit. systemd is not PID 1 here, so the unit's
 * ExecStart line runs exactly as written, as its User/Group/SupplementaryGroups, with only its
 * AmbientCapabilities/CapabilityBoundingSet and NoNewPrivileges (setpriv), its Environment= and
 * EnvironmentFile=, inside a network namespace joined to this host by a veth pair: the agent
 * registers with a real control plane, syncs, and a decision lands in a real nftables set in the
 * namespace. `dpkg -r` keeps configuration and state, `dpkg -P` removes everything.
 * Not emulated: the unit's file-system and system-call sandboxing (ProtectSystem=, …), which only
 * systemd applies (systemd-analyze checks those lines).
 */

const gate = systemGate('agent .deb installed with dpkg and run as its unit says', {
  commands: ['dpkg', 'dpkg-deb', 'setpriv', 'nft', 'ip', 'systemd-analyze', 'useradd', 'getent'],
  root: true,
});
const agentDir = fileURLToPath(new URL('../../apps/agent/', import.meta.url));
const LISTED = '45.61.7.10';
const AUTH_LOG = `/var/log/rampart-deb-test-${randomBytes(3).toString('hex')}.log`;

function sh(argv: string[], env?: NodeJS.ProcessEnv): SpawnSyncReturns<string> {
  return spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', ...(env ? { env } : {}) });
}

/** As sh(), without blocking this process (the control plane it hosts must answer meanwhile). */
function shAsync(argv: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('exit', (status) => resolve({ status, stdout, stderr })));
}

/** dpkg, waiting while another dpkg or apt holds its lock (a shared machine). */
async function dpkg(args: string[]): Promise<SpawnSyncReturns<string>> {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const r = sh(['dpkg', ...args]);
    if (r.status === 0 || !/lock/.test(r.stderr) || Date.now() > deadline) return r;
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

/** The [Service] directives of a unit: name → values in order (a name may repeat). */
function serviceDirectives(unit: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let section = '';
  for (const raw of unit.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    if (line.startsWith('[')) {
      section = line;
      continue;
    }
    if (section !== '[Service]') continue;
    const eq = line.indexOf('=');
    const name = line.slice(0, eq);
    out.set(name, [...(out.get(name) ?? []), line.slice(eq + 1)]);
  }
  return out;
}

/** `CAP_NET_ADMIN CAP_X` → `net_admin,x` for setpriv. */
const capsOf = (value: string) =>
  value
    .split(/\s+/)
    .filter(Boolean)
    .map((c) => c.replace(/^CAP_/, '').toLowerCase())
    .join(',');

/** KEY=VALUE lines of an environment file (comments and blanks skipped), as systemd reads them. */
function envFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const eq = line.indexOf('=');
    if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1).replace(/^"(.*)"$/, '$1');
  }
  return env;
}

describe.skipIf(gate)('the agent .deb, installed and run as its unit says', { timeout: 900_000 }, () => {
  let out: Awaited<ReturnType<typeof tempDir>>;
  let deb: string;
  let lab: NetnsLab;
  let ns: string;
  let hostDev: string;
  let cp: ControlPlane;
  let admin: string;
  let contributor: RampartClient;
  let nsAddr: string;
  let agent: ReturnType<typeof spawn> | undefined;
  let agentLog = '';
  let installed = false;

  beforeAll(async () => {
    // Never clobber a real installation of this machine.
    expect(sh(['dpkg-query', '-W', '-f', '${Status}', 'rampart-agent']).stdout).not.toContain('install ok installed');
    out = await tempDir('rampart-deb-');
    const built = spawnSync(process.execPath, [join(agentDir, 'scripts/package.mjs'), '--out', out.path], { encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`package.mjs exited ${built.status}: ${built.stderr}`);
    deb = built.stdout.trim();

    lab = new NetnsLab();
    ns = await lab.namespace('deb');
    // host (10.a.b.1) ── veth ── namespace (10.a.b.2): the agent inside reaches the control plane here.
    const net = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 250)}`;
    hostDev = `rd${randomBytes(3).toString('hex')}`;
    nsAddr = `${net}.2`;
    for (const argv of [
      ['ip', 'link', 'add', hostDev, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns],
      ['ip', 'addr', 'add', `${net}.1/30`, 'dev', hostDev],
      ['ip', 'link', 'set', hostDev, 'up'],
    ]) {
      const r = sh(argv);
      if (r.status !== 0) throw new Error(`${argv.join(' ')}: ${r.stderr}`);
    }
    await lab.exec(ns, ['ip', 'addr', 'add', `${nsAddr}/30`, 'dev', 'eth0']);
    await lab.exec(ns, ['ip', 'link', 'set', 'eth0', 'up']);
    cp = await startControlPlane({ host: `${net}.1` });
    const org = await seedOrg(cp.store, { credits: 1_000_000, trust: 1 });
    admin = org.keys.admin;
    contributor = new RampartClient({ baseUrl: cp.url, apiKey: org.keys.contributor, retries: 0 });
  }, 900_000);

  afterAll(async () => {
    if (agent && agent.exitCode === null) agent.kill('SIGKILL');
    if (installed) await dpkg(['-P', 'rampart-agent']);
    await rm(AUTH_LOG, { force: true });
    await cp?.close();
    sh(['ip', 'link', 'del', hostDev]);
    await lab?.destroy();
    await out?.remove();
  });

  it('installs with dpkg -i: its own Node.js, the user, config and state with their modes; a unit systemd-analyze accepts', async () => {
    const r = await dpkg(['-i', deb]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    installed = true;
    expect(deb.endsWith(`/rampart-agent_0.1.0_${process.arch === 'arm64' ? 'arm64' : 'amd64'}.deb`)).toBe(true);

    // The runtime is the package's own: the official binary of the version package.json names.
    const manifest = JSON.parse(readFileSync(join(agentDir, 'package.json'), 'utf8')) as { rampart: { node: string } };
    expect(sh(['/usr/lib/rampart-agent/node/bin/node', '-p', 'process.versions.node']).stdout.trim()).toBe(manifest.rampart.node);
    const unit = readFileSync('/usr/lib/systemd/system/rampart-agent.service', 'utf8');
    const wrapper = readFileSync('/usr/bin/rampart-agent', 'utf8');
    // Nothing points at the machine that built it, nor where a service cannot reach.
    for (const text of [unit, wrapper]) expect(text.match(/(^|[\s=:])\/(root|home|tmp)(\/|\s|$)/gm)).toBeNull();
    const d = serviceDirectives(unit);
    expect(d.get('ExecStart')).toEqual(['/usr/lib/rampart-agent/node/bin/node --expose-gc --max-semi-space-size=1 --max-old-space-size=256 /usr/lib/rampart-agent/rampart-agent.mjs run --config /etc/rampart-agent/agent.json']);
    expect([d.get('AmbientCapabilities'), d.get('CapabilityBoundingSet')]).toEqual([['CAP_NET_ADMIN'], ['CAP_NET_ADMIN']]);
    expect(wrapper.split('\n')[2]).toBe('exec /usr/lib/rampart-agent/node/bin/node --max-semi-space-size=1 --heap-growing-percent=50 /usr/lib/rampart-agent/rampart-agent.mjs "$@"');

    const user = sh(['getent', 'passwd', 'rampart-agent']).stdout.trim().split(':');
    expect([user[0], user[5], user[6]]).toEqual(['rampart-agent', '/var/lib/rampart-agent', '/usr/sbin/nologin']);
    expect(Number(user[2])).toBeLessThan(1000);
    const uid = Number(user[2]);
    const gid = Number(user[3]);
    const owner = (p: string) => {
      const s = statSync(p);
      return [(s.mode & 0o7777).toString(8), s.uid === 0 ? 'root' : s.uid === uid ? 'rampart-agent' : String(s.uid), s.gid === 0 ? 'root' : s.gid === gid ? 'rampart-agent' : String(s.gid)];
    };
    expect(owner('/etc/rampart-agent')).toEqual(['750', 'root', 'rampart-agent']);
    expect(owner('/etc/rampart-agent/agent.json')).toEqual(['640', 'root', 'rampart-agent']);
    expect(owner('/etc/rampart-agent/agent.env')).toEqual(['600', 'root', 'root']);
    expect(owner('/var/lib/rampart-agent')).toEqual(['700', 'rampart-agent', 'rampart-agent']);
    const host = sh(['uname', '-n']).stdout.trim().replace(/[^A-Za-z0-9]/g, '') || 'agent';
    const sample = JSON.parse(readFileSync('/usr/lib/rampart-agent/rampart-agent-packaging/agent.json.example', 'utf8')) as Record<string, unknown>;
    expect(JSON.parse(readFileSync('/etc/rampart-agent/agent.json', 'utf8'))).toEqual({ ...sample, gaid: `RMP-AGENT-ID-${host}` });

    // The installed program validates the configuration it was given.
    const valid = sh(['/usr/bin/rampart-agent', 'validate-config', '/etc/rampart-agent/agent.json']);
    expect([valid.status, valid.stdout]).toEqual([0, `/etc/rampart-agent/agent.json: valid (agent RMP-AGENT-ID-${host}; sources: ssh_log; enforcers: packet_filter)\n`]);

    const verify = sh(['systemd-analyze', 'verify', '/usr/lib/systemd/system/rampart-agent.service']);
    expect(verify.stderr).toBe('');
    expect(verify.status).toBe(0);
  });

  it('runs ExecStart as written as rampart-agent with only CAP_NET_ADMIN: registers, syncs and enforces into nftables', async () => {
    const d = serviceDirectives(readFileSync('/usr/lib/systemd/system/rampart-agent.service', 'utf8'));
    const execStart = d.get('ExecStart')![0]!;
    // Plain words: no quoting, specifiers or variables for systemd to expand, so a split is exact.
    expect(execStart).toMatch(/^[^"'%$\\]+$/);
    const caps = capsOf(d.get('AmbientCapabilities')!.join(' '));
    expect(capsOf(d.get('CapabilityBoundingSet')!.join(' '))).toBe(caps);
    expect(d.get('NoNewPrivileges')).toEqual(['yes']);
    const setpriv = [
      'setpriv',
      `--reuid=${d.get('User')![0]}`,
      `--regid=${d.get('Group')![0]}`,
      `--groups=${d.get('SupplementaryGroups')!.join(',').split(/\s+/).join(',')}`,
      `--inh-caps=-all,+${caps}`,
      `--ambient-caps=-all,+${caps}`,
      `--bounding-set=-all,+${caps}`,
      '--no-new-privs',
      '--',
    ];
    // The service's environment: what systemd sets, Environment= and EnvironmentFile= (read as root, by systemd).
    const environment: Record<string, string> = {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: '/var/lib/rampart-agent',
      USER: 'rampart-agent',
      LOGNAME: 'rampart-agent',
      STATE_DIRECTORY: '/var/lib/rampart-agent',
      CONFIGURATION_DIRECTORY: '/etc/rampart-agent',
    };
    for (const line of d.get('Environment') ?? []) for (const pair of line.split(/\s+/)) environment[pair.slice(0, pair.indexOf('='))] = pair.slice(pair.indexOf('=') + 1);
    for (const file of d.get('EnvironmentFile') ?? []) {
      const path = file.replace(/^-/, '');
      if (existsSync(path)) Object.assign(environment, envFile(readFileSync(path, 'utf8')));
      else expect(file.startsWith('-')).toBe(true);
    }

    // The sample configuration, pointed at this control plane and at an SSH log only group adm may read.
    writeFileSync(AUTH_LOG, '', { mode: 0o640 });
    expect(sh(['chown', 'root:adm', AUTH_LOG]).status).toBe(0);
    const config = JSON.parse(readFileSync('/etc/rampart-agent/agent.json', 'utf8')) as { ids: { ssh_log: Record<string, unknown> }; local: Record<string, unknown> & { enforcers: { packet_filter: Record<string, unknown> } } };
    const gaid = `RMP-AGENT-ID-deb${randomBytes(3).toString('hex')}`;
    writeFileSync(
      '/etc/rampart-agent/agent.json',
      JSON.stringify({
        ...config,
        control_plane_url: cp.url,
        gaid,
        sync_time: 1,
        ids: { ssh_log: { ...config.ids.ssh_log, ssh_log_location: AUTH_LOG } },
        local: { ...config.local, metrics_host: nsAddr, sync_cron: '*/2 * * * * *', reconcile_seconds: 1, allow_list: [], enforcers: { packet_filter: { ...config.local.enforcers.packet_filter, capacity: 1000 } } },
      }),
    );

    const inNs = (argv: string[]) => ['ip', 'netns', 'exec', ns, ...setpriv, ...argv];
    const registered = await shAsync(inNs(['/usr/bin/rampart-agent', 'register', '-c', '/etc/rampart-agent/agent.json']), { ...environment, RAMPART_ADMIN_KEY: admin });
    expect(registered.stderr).toBe('');
    expect(registered.status).toBe(0);
    expect(registered.stdout.split('\n')[0]).toBe(`registered ${gaid}: agent created successfully`);
    expect(statSync('/var/lib/rampart-agent/credentials.json').uid).toBe(Number(sh(['id', '-u', 'rampart-agent']).stdout));

    const argv = inNs(execStart.split(' '));
    agent = spawn(argv[0]!, argv.slice(1), { env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
    agent.stdout!.on('data', (c: Buffer) => (agentLog += c.toString()));
    agent.stderr!.on('data', (c: Buffer) => (agentLog += c.toString()));
    const health = async () => {
      try {
        return (await (await fetch(`http://${nsAddr}:${config.local.metrics_port as number}/healthz`, { signal: AbortSignal.timeout(1000) })).json()) as Record<string, unknown>;
      } catch {
        return undefined;
      }
    };
    try {
      await waitFor('the agent healthy and connected', async () => {
        if (agent!.exitCode !== null) throw new Error(`agent exited ${agent!.exitCode}`);
        const h = await health();
        return h?.healthy === true && h.channel_connected === true;
      }, 240_000, 200);
    } catch (err) {
      throw new Error(`${String(err)}\nagent output:\n${agentLog.slice(-4000)}`);
    }

    // The process is what the unit describes: ip netns exec and setpriv exec in place, so the pid is node's.
    const status = readFileSync(`/proc/${agent.pid}/status`, 'utf8');
    const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)![1]!.split(/\s+/);
    const uid = sh(['id', '-u', 'rampart-agent']).stdout.trim();
    expect(field('Uid')).toEqual([uid, uid, uid, uid]);
    expect(field('Groups')).toContain(sh(['getent', 'group', 'adm']).stdout.split(':')[2]);
    // CAP_NET_ADMIN is bit 12: effective, permitted, ambient and bounding sets hold it and nothing else.
    expect([field('CapEff'), field('CapPrm'), field('CapAmb'), field('CapBnd')].map((f) => f[0])).toEqual(['0000000000001000', '0000000000001000', '0000000000001000', '0000000000001000']);
    expect(field('NoNewPrivs')).toEqual(['1']);
    expect(readFileSync(`/proc/${agent.pid}/cmdline`, 'utf8').split('\0').filter(Boolean)).toEqual(execStart.split(' '));

    // A decision on the server reaches nftables in the namespace.
    await contributor.reportIp({ ip: LISTED, confidence: 1, source: 'console', decision: 1 });
    const elements = async () => {
      const r = await lab.exec(ns, ['nft', '-j', 'list', 'set', 'inet', 'rampart', 'addrs']).catch(() => undefined);
      if (!r) return [];
      const doc = JSON.parse(r.stdout) as { nftables: { set?: { elem?: unknown[] } }[] };
      return (doc.nftables.find((o) => o.set)?.set?.elem ?? []).map(String);
    };
    try {
      await waitFor(`${LISTED} in the nftables set`, async () => (await elements()).includes(LISTED), 120_000, 200);
    } catch (err) {
      throw new Error(`${String(err)}\nagent output:\n${agentLog.slice(-4000)}`);
    }
    expect(await elements()).toEqual([LISTED]);
    // The server saw it: the agent synced and said what it enforces.
    const seen = await waitFor('the agent state on the server', async () => {
      const res = await fetch(`${cp.url}/agents`, { headers: { authorization: admin } });
      const mine = ((await res.json()) as { gaid: string; last_checkin: number | null }[]).find((a) => a.gaid === gaid);
      return mine?.last_checkin ? mine : undefined;
    }, 30_000, 200);
    expect(seen.gaid).toBe(gaid);

    agent.kill('SIGTERM');
    expect(await new Promise((resolve) => agent!.once('exit', (code) => resolve(code)))).toBe(0);
  });

  it('dpkg -r keeps configuration and state; dpkg -P removes everything it installed', async () => {
    const files = sh(['dpkg-query', '-L', 'rampart-agent']).stdout.split('\n').filter(Boolean);
    // Configuration files stay after dpkg -r, as dpkg keeps every package's conffiles.
    const conffiles = ['/etc/fail2ban/action.d/rampart.conf'];
    const ownFiles = files.filter((f) => !statSync(f).isDirectory() && !conffiles.includes(f));
    expect(ownFiles).toContain('/usr/lib/rampart-agent/node/bin/node');
    const removed = await dpkg(['-r', 'rampart-agent']);
    expect(removed.status, removed.stderr).toBe(0);
    expect(ownFiles.filter((f) => existsSync(f))).toEqual([]);
    expect(['/etc/rampart-agent/agent.json', '/etc/rampart-agent/agent.env', '/var/lib/rampart-agent/credentials.json', ...conffiles].filter((f) => !existsSync(f))).toEqual([]);
    expect(sh(['getent', 'passwd', 'rampart-agent']).status).toBe(0);

    const purged = await dpkg(['-P', 'rampart-agent']);
    expect(purged.status, purged.stderr).toBe(0);
    installed = false;
    expect([...files, '/etc/rampart-agent', '/var/lib/rampart-agent'].filter((f) => f.includes('rampart') && existsSync(f))).toEqual([]);
    expect([sh(['getent', 'passwd', 'rampart-agent']).status, sh(['getent', 'group', 'rampart-agent']).status]).toEqual([2, 2]);
    expect(sh(['dpkg-query', '-W', '-f', '${Status}', 'rampart-agent']).stdout).not.toContain('installed');
  });
});
