import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { RampartClient } from '@rampart/client';
import { NetnsLab } from '@rampart/plugin-kit/testing';
import { seedOrg } from '@rampart/server/testing';
import { agentConfigDocument, agentHealth, freePort, runAgentCommand, spawnAgent, startControlPlane, tempDir, waitFor, type AgentProcess, type ControlPlane } from './support.ts';

/*
 * The whole decision-to-drop path on one machine: the real control plane, the real agent (its
 * `rampart-agent` bin, running as root in the host namespace) enforcing `ips.packet_filter` with
 * the nftables backend inside a firewall namespace (`options.netns`), and a client namespace
 * whose sources probe it:
 *
 *   client (45.61.7.x) ── fw (45.61.7.1 | 45.62.0.1, forwarding) ── server (45.62.0.2)
 *
 * Public addresses, not the documentation ranges of `firewallTopology`: the agent's never-block
 * list refuses every special range, so a decision on 198.51.100.x would never reach nft. The
 * namespaces have no route to anything else, so nothing outside them is addressed.
 */

export const LAB = {
  fwLan: '45.61.7.1',
  fwWan: '45.62.0.1',
  server: '45.62.0.2',
  unlisted: '45.61.7.200',
  port: 8080,
  /** The n-th source that a decision will list (n from 0). */
  listed: (n: number) => `45.61.7.${10 + n}`,
} as const;

export interface DropLab {
  lab: NetnsLab;
  client: string;
  fw: string;
  server: string;
  cp: ControlPlane;
  contributor: RampartClient;
  /** An admin key of the organization, and the agent's gaid. */
  adminKey: string;
  gaid: string;
  agent: AgentProcess;
  metricsPort: number;
  csvPath: string;
  dir: string;
  backend: PacketFilterBackend;
  /** `nft` inside the firewall namespace. */
  nft(args: string[]): Promise<string>;
  /** What the packet filter holds now (nft set or ipset members), sorted. */
  enforced(): Promise<string[]>;
  /** The value of one agent metric line (`name{labels}`), or 0 when absent. */
  metric(series: string): Promise<number>;
  close(): Promise<void>;
}

export type PacketFilterBackend = 'nftables' | 'ipset';

export interface DropLabOptions {
  /** `ips.packet_filter` backend (`options.backend`); nftables by default. */
  backend?: PacketFilterBackend;
  /** Sources on the client side that decisions will list (`LAB.listed(0..n-1)`). */
  listed: number;
  reconcileSeconds: number;
  /** Also enforce into a CSV file (`ips.csv`). */
  csv?: boolean;
  /** `ips.csv.csv_reload_command` ('' by default). */
  csvReloadCommand?: string;
  /** `local.stop_timeout_seconds` (the agent's default when omitted). */
  stopTimeoutSeconds?: number;
  logLevel?: string;
}

export async function startDropLab(options: DropLabOptions): Promise<DropLab> {
  const backend = options.backend ?? 'nftables';
  const lab = new NetnsLab();
  const cleanups: (() => Promise<unknown>)[] = [() => lab.destroy()];
  const close = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  try {
    const client = await lab.namespace('cli');
    const fw = await lab.namespace('fw');
    const server = await lab.namespace('srv');
    const sources = [...Array.from({ length: options.listed }, (_, i) => LAB.listed(i)), LAB.unlisted];
    await lab.link({ ns: client, dev: 'eth0', addresses: sources.map((a) => `${a}/24`) }, { ns: fw, dev: 'lan', addresses: [`${LAB.fwLan}/24`] });
    await lab.link({ ns: fw, dev: 'wan', addresses: [`${LAB.fwWan}/24`] }, { ns: server, dev: 'eth0', addresses: [`${LAB.server}/24`] });
    await lab.exec(client, ['ip', 'route', 'add', 'default', 'via', LAB.fwLan]);
    await lab.exec(server, ['ip', 'route', 'add', 'default', 'via', LAB.fwWan]);
    await lab.exec(fw, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    await lab.listen(fw, LAB.port);
    await lab.listen(server, LAB.port);

    const cp = await startControlPlane();
    cleanups.push(() => cp.close());
    const tmp = await tempDir('rampart-drop-');
    cleanups.push(() => tmp.remove());
    const org = await seedOrg(cp.store, { credits: 1_000_000, trust: 1 });
    const contributor = new RampartClient({ baseUrl: cp.url, apiKey: org.keys.contributor, retries: 0 });

    const metricsPort = await freePort();
    const configPath = join(tmp.path, 'agent.json');
    const csvPath = join(tmp.path, 'list.csv');
    const gaid = `RMP-AGENT-ID-drop${Math.floor(Math.random() * 1e6)}`;
    await writeFile(
      configPath,
      JSON.stringify(
        agentConfigDocument({
          controlPlaneUrl: cp.url,
          gaid,
          ids: {},
            ips: {
              packet_filter: { active: true, acl: '', reload_command: '' },
              ...(options.csv ? { csv: { active: true, csv_logs: csvPath, csv_reload_command: options.csvReloadCommand ?? '' } } : {}),
            },
            local: {
              state_dir: join(tmp.path, 'state'),
              metrics_port: metricsPort,
              log_level: options.logLevel ?? 'info',
              sync_cron: '*/2 * * * * *',
              reconcile_seconds: options.reconcileSeconds,
              ...(options.stopTimeoutSeconds !== undefined ? { stop_timeout_seconds: options.stopTimeoutSeconds } : {}),
              enforcers: { packet_filter: backend === 'ipset' ? { backend, set: 'rampart', netns: fw } : { backend, table: 'rampart', netns: fw } },
            },
        }),
      ),
    );
    const validated = await runAgentCommand(['validate-config', configPath], {});
    if (validated.code !== 0) throw new Error(`agent config refused: ${validated.err}`);
    const registered = await runAgentCommand(['register', '-c', configPath], { RAMPART_ADMIN_KEY: org.keys.admin });
    if (registered.code !== 0) throw new Error(`register failed: ${registered.err}`);

    const agent = spawnAgent(['run', '-c', configPath], {}, join(tmp.path, 'agent.log'));
    cleanups.push(() => agent.kill9());
    let lastHealth: unknown;
    // Before the temporary directory goes: what the agent said, when it never became ready.
    cleanups.push(async () => {
      if (ready) return;
      const log = await readFile(join(tmp.path, 'agent.log'), 'utf8').catch(() => '');
      console.error(`agent never ready; last /healthz: ${JSON.stringify(lastHealth)}\nagent log (end):\n${log.slice(-4000)}`);
    });
    let ready = false;
    await waitFor('agent healthy, connected, its rules in place', async () => {
      const h = await agentHealth(metricsPort);
      lastHealth = h;
      if (h?.healthy !== true || h.channel_connected !== true) return false;
      if (backend === 'ipset') return (await lab.exec(fw, ['iptables', '-S', 'INPUT'])).stdout.includes('--match-set rampart src');
      return (await lab.exec(fw, ['nft', 'list', 'tables'])).stdout.includes('inet rampart');
    });
    ready = true;

    return {
      lab,
      client,
      fw,
      server,
      cp,
      contributor,
      adminKey: org.keys.admin,
      gaid,
      agent,
      metricsPort,
      csvPath,
      dir: tmp.path,
      backend,
      async nft(args) {
        return (await lab.exec(fw, ['nft', ...args])).stdout;
      },
      async enforced() {
        if (backend === 'ipset') {
          const out = (await lab.exec(fw, ['ipset', 'list', 'rampart'])).stdout;
          return out.slice(out.indexOf('Members:') + 'Members:'.length).split('\n').map((l) => l.trim()).filter(Boolean).sort();
        }
        const set = JSON.parse((await lab.exec(fw, ['nft', '-j', 'list', 'set', 'inet', 'rampart', 'addrs'])).stdout) as { nftables: { set?: { elem?: string[] } }[] };
        return [...(set.nftables.find((o) => o.set)?.set?.elem ?? [])].sort();
      },
      async metric(series) {
        const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith(`${series} `));
        return line ? Number(line.slice(series.length + 1)) : 0;
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

const WATCHER = `
const net = require('node:net');
const [host, port, source, every, timeout] = process.argv.slice(1).map((v, i) => (i === 0 || i === 2 ? v : Number(v)));
setInterval(() => {
  const at = Date.now();
  const s = net.connect({ host, port, localAddress: source });
  let done = false;
  const end = (r) => {
    if (done) return;
    done = true;
    s.destroy();
    process.stdout.write(JSON.stringify({ at, r }) + '\\n');
  };
  s.setTimeout(timeout, () => end('timeout'));
  s.on('data', () => end('open'));
  s.on('error', (e) => end(e.code === 'ECONNREFUSED' ? 'refused' : 'timeout'));
}, every);
`;

export interface DropWatcher {
  /** Resolves once a probe has passed (the path works before the decision). */
  passing: Promise<void>;
  /** Start time (ms since epoch, this host's clock) of the earliest dropped probe seen. */
  firstDrop(deadlineMs: number): Promise<number>;
  stop(): void;
}

/**
 * Connects from `source` to `host:port` every `everyMs` from inside the client namespace and
 * records each attempt's start time and outcome: the first dropped attempt dates the drop to
 * within `everyMs`, instead of the tens of milliseconds a process per probe would add.
 */
export function watchDrops(ns: string, source: string, host: string, port: number, everyMs = 10, timeoutMs = 300): DropWatcher {
  const child: ChildProcess = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', WATCHER, host, String(port), source, String(everyMs), String(timeoutMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const drops: number[] = [];
  let onLine = () => {};
  let passed: () => void = () => {};
  const passing = new Promise<void>((resolve) => (passed = resolve));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const { at, r } = JSON.parse(line) as { at: number; r: string };
    if (r === 'open') passed();
    else if (r === 'timeout') drops.push(at);
    onLine();
  });
  return {
    passing,
    async firstDrop(deadlineMs) {
      const deadline = Date.now() + deadlineMs;
      while (drops.length === 0) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no probe from ${source} was dropped within ${deadlineMs} ms`);
        await new Promise<void>((resolve) => {
          onLine = resolve;
          setTimeout(resolve, 100);
        });
      }
      // Attempts finish out of order (a drop is known only at its timeout): wait out one timeout.
      await new Promise((r) => setTimeout(r, timeoutMs + 50));
      return Math.min(...drops);
    },
    stop() {
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/**
 * The labs a suite starts, closed together in its afterAll — including one whose start outlived
 * its beforeAll's timeout: the hook gives up, the start goes on, and without this the lab (network
 * namespaces with listeners inside, a control plane, an agent) would outlive the test run.
 */
export function dropLabs(): { start(options: DropLabOptions): Promise<DropLab>; closeAll(): Promise<void> } {
  const started: Promise<DropLab>[] = [];
  return {
    start(options) {
      const starting = startDropLab(options);
      started.push(starting);
      return starting;
    },
    async closeAll() {
      for (const starting of started.splice(0)) await (await starting.catch(() => undefined))?.close();
    },
  };
}
