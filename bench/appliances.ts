/*
 * Appliance enforcers against their test stand-ins, next to nftables in the same run (issue 20,
 * "Done when"): for each subject, through the enforcer its plugin definition's `create()` builds
 * (so the engine path is what is measured),
 *   - `sync` of 1,000 addresses into an empty target (emptied by `withdraw`, untimed), and
 *   - `apply` of a 100-address diff (50 added, 50 removed) on those 1,000 (undone, untimed),
 * as medians of ROUNDS, with each row's ratio to the nftables row (a kernel set in a network
 * namespace: the reference, not a target; no ratio is asked for, so there is no verdict).
 * The stand-ins are the plugins' test servers (test/, not shipped), running in this process: the
 * figures are the enforcer's work plus its protocol round trips to a local stand-in, not a device.
 * A new appliance is one more entry in `subjects`. Needs root, nft and ip (for the reference).
 * Writes bench/results/appliances.md. Run: npx tsx bench/appliances.ts
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, setPriority, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineStats, SshSession, type BlockEntry, type Enforcer, type PluginLogger } from '@rampart/plugin-kit';
import { missingSystem, NetnsLab, startSshStandIn } from '@rampart/plugin-kit/testing';
import { nftablesEnforcer } from '@rampart/enforcer-nftables';
import { MikrotikConfig, mikrotikEnforcer } from '@rampart/enforcer-mikrotik';
import { CheckPointMgmtConfig, checkpointMgmtEnforcer } from '@rampart/enforcer-checkpoint-mgmt';
import { checkpointSecureXlEnforcer, SecureXlConfig } from '@rampart/enforcer-checkpoint-securexl';
import { startRouterStandIn } from '../plugins/enforcer-mikrotik/test/routeros-stand-in.ts';
import { startMgmtApiStandIn } from '../plugins/enforcer-checkpoint-mgmt/test/mgmt-api-stand-in.ts';
import { startGatewayStandIn, type GatewayStandIn } from '../plugins/enforcer-checkpoint-securexl/test/gateway-stand-in.ts';
import { CiscoAsaConfig, CiscoIosConfig, ciscoAsaEnforcer, ciscoIosEnforcer } from '@rampart/enforcer-cisco';
import { startIosStandIn } from '../plugins/enforcer-cisco/test/ios-stand-in.ts';
import { startAsaStandIn } from '../plugins/enforcer-cisco/test/asa-stand-in.ts';
import { FirewallBFeedConfig, firewallBFeedEnforcer } from '@rampart/enforcer-feed-server';

const FULL = 1_000;
const DIFF = 100;
const ROUNDS = 5;
const silent: PluginLogger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

const missing = missingSystem({ commands: ['nft', 'ip'], root: true });
if (missing) {
  console.log(`bench/appliances: cannot run (the nftables reference row needs it): ${missing}`);
  process.exit(process.env.CI ? 1 : 0);
}

const address = (i: number) => `100.${64 + ((i >> 16) & 63)}.${(i >> 8) & 255}.${i & 255}`;
const entries: BlockEntry[] = Array.from({ length: FULL }, (_, i) => ({ value: `${address(i * 3)}/32`, score: 100 + (i % 900) }));
const added = Array.from({ length: DIFF / 2 }, (_, i) => ({ value: `${address(i * 3 + 1)}/32`, score: 500 }));
const removed = entries.slice(0, DIFF / 2).map((e) => e.value);
const byText = (xs: string[]) => [...xs].sort();
const fullSet = byText(entries.map((e) => e.value));
const diffSet = byText([...entries.slice(DIFF / 2).map((e) => e.value), ...added.map((e) => e.value)]);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

interface Started {
  enforcer: Enforcer;
  /** Requests the stand-in has received so far (SSH execs, API calls), when it counts them. */
  calls?(): number;
  stop(): Promise<void>;
}
interface Subject {
  name: string;
  /** The transport and what one operation does there, for the results file. */
  how: string;
  start(): Promise<Started>;
}

// The plugins' own test credentials; the stand-ins accept only these.
const sshAuth = { user: 'rampart', password: 'pw-1' };
const gatewayAuth = { user: 'admin', password: 'expert-pw' };
const execs = (members: GatewayStandIn[]) => () => members.reduce((n, m) => n + m.state.execs.length, 0);

async function securexl(members: number, vsids: string[]): Promise<Started> {
  const gws = await Promise.all(Array.from({ length: members }, () => startGatewayStandIn(gatewayAuth, vsids.length ? ['0', ...vsids] : [])));
  const targets = gws.map((g) => `127.0.0.1:${g.port}`);
  const config = SecureXlConfig.parse({
    active: true,
    connections: targets.join(','),
    password: gatewayAuth.password,
    command: '',
    vsids: vsids.join(','),
    options: { member_host_keys: Object.fromEntries(targets.map((t, i) => [t, gws[i]!.hostKeySha256])) },
  });
  const enforcer = await checkpointSecureXlEnforcer.create(config, { log: silent });
  return {
    enforcer,
    calls: execs(gws),
    stop: async () => {
      await enforcer.close();
      await Promise.all(gws.map((g) => g.stop()));
    },
  };
}

const reference: Subject = {
  name: 'nftables (reference)',
  how: 'kernel set in a network namespace, `nft -f` per operation',
  async start() {
    const lab = new NetnsLab();
    const ns = await lab.namespace('nft');
    const enforcer = await nftablesEnforcer.create(nftablesEnforcer.configSchema.parse({ active: true, options: { netns: ns } }), { log: silent });
    return {
      enforcer,
      stop: async () => {
        await enforcer.close();
        await lab.destroy();
      },
    };
  },
};

const subjects: Subject[] = [
  reference,
  {
    name: 'router_a RouterOS (enforcer-mikrotik)',
    how: 'SSH exec, address-list commands in batches of 500 (the default) and at most 32,000 bytes, list swap on a full replace',
    async start() {
      const router = await startRouterStandIn(sshAuth);
      const config = MikrotikConfig.parse({
        active: true,
        router_host: '127.0.0.1',
        router_user: sshAuth.user,
        router_password: sshAuth.password,
        options: { port: router.port, host_key_sha256: router.hostKeySha256 },
      });
      const enforcer = await mikrotikEnforcer.create(config, { log: silent });
      return {
        enforcer,
        calls: () => router.state.execs.length,
        stop: async () => {
          await enforcer.close();
          await router.stop();
        },
      };
    },
  },
  {
    name: 'firewall_mgmt_a Check Point Management API (enforcer-checkpoint-mgmt)',
    how: 'HTTPS Web API: login, add-/delete-host, set-group in batches of 500, publish, install-policy on 2 gateways, show-task polls, logout',
    async start() {
      const api = await startMgmtApiStandIn({ user: 'api-admin', password: 'pw-1' });
      const config = CheckPointMgmtConfig.parse({
        active: true,
        username: 'api-admin',
        password: 'pw-1',
        address: '127.0.0.1',
        group: 'rampart-blocked',
        policy: 'Standard',
        gateways: 'gw1, gw2',
        // Poll the stand-in's tasks (publish: 1 poll, install: 2 polls) as fast as the config allows,
        // so that the figure is the enforcer's work and round trips, not the 2 s default poll interval.
        options: { port: api.port, tls_fingerprint_sha256: api.fingerprint256, task_poll_seconds: 0.001 },
      });
      const enforcer = await checkpointMgmtEnforcer.create(config, { log: silent });
      return {
        enforcer,
        calls: () => api.state.calls.length,
        stop: async () => {
          await enforcer.close();
          await api.stop();
        },
      };
    },
  },
  {
    name: 'router_a Cisco IOS, object groups (enforcer-cisco)',
    how: 'interactive SSH CLI, one line and its prompt at a time: `object-group network` entries, a second group swapped in under the ACL deny entry on a full replace',
    async start() {
      const router = await startIosStandIn(sshAuth);
      const config = CiscoIosConfig.parse({
        active: true,
        router_host: '127.0.0.1',
        router_user: sshAuth.user,
        router_password: sshAuth.password,
        options: { dialect: 'ios', port: router.port, host_key_sha256: router.hostKeySha256 },
      });
      const enforcer = await ciscoIosEnforcer.create(config, { log: silent });
      return {
        enforcer,
        calls: () => router.received.length,
        stop: async () => {
          await enforcer.close();
          await router.stop();
        },
      };
    },
  },
  {
    name: 'firewall_c Cisco ASA shuns (enforcer-cisco)',
    how: 'interactive SSH CLI: `shun`/`no shun` per address, `show shun` read back (max_entries raised to 1,000 for the bench; the default is 200)',
    async start() {
      const asa = await startAsaStandIn({ user: sshAuth.user, password: 'pw-2' });
      const config = CiscoAsaConfig.parse({
        active: true,
        address: `127.0.0.1:${asa.port}`,
        user: sshAuth.user,
        password: 'pw-2',
        command: '',
        options: { host_key_sha256: asa.hostKeySha256, max_entries: 1000 },
      });
      const enforcer = await ciscoAsaEnforcer.create(config, { log: silent });
      return {
        enforcer,
        calls: () => asa.received.length,
        stop: async () => {
          await enforcer.close();
          await asa.stop();
        },
      };
    },
  },
  {
    name: 'firewall_b pull feed (enforcer-feed-server)',
    how: 'the list written atomically as the feed file the agent serves over HTTPS (no device refresh configured); a device fetches it on its own schedule',
    async start() {
      const dir = await mkdtemp(join(tmpdir(), 'rampart-bench-feed-'));
      const config = FirewallBFeedConfig.parse({
        active: true,
        password: 'feed-pass-1',
        feeds: 'rampart',
        updates: '5',
        options: { listen_host: '127.0.0.1', listen_port: 0, state_dir: dir, cert_names: ['localhost', '127.0.0.1'] },
      });
      const enforcer = await firewallBFeedEnforcer.create(config, { log: silent });
      return {
        enforcer,
        stop: async () => {
          await enforcer.close();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'firewall_accel_a SecureXL (enforcer-checkpoint-securexl), 1 gateway',
    how: 'SSH exec of bash: `fwaccel dos deny -F` + `-l <file>` on a full replace, `-a`/`-d` on a diff',
    start: () => securexl(1, []),
  },
  {
    name: 'firewall_accel_a SecureXL, 2 members × 2 VSX virtual systems',
    how: 'the same on each member, once per `vsenv` (4 deny lists)',
    start: () => securexl(2, ['1', '2']),
  },
];

interface Row {
  name: string;
  how: string;
  sync: number;
  diff: number;
  syncCalls?: number;
  diffCalls?: number;
}

/** The target must hold exactly `want` (read back through the enforcer, untimed). */
async function check(e: Enforcer, want: string[], what: string): Promise<void> {
  const got = byText(await e.list());
  if (got.length !== want.length || got.some((v, i) => v !== want[i])) throw new Error(`${what}: read back ${got.length} entries, not the ${want.length} expected`);
}

async function measure(subject: Subject): Promise<Row> {
  const s = await subject.start();
  const e = s.enforcer;
  try {
    const health = await e.healthcheck(); // also opens the connection, untimed
    if (!health.ok) throw new Error(`${subject.name}: ${health.detail}`);
    const calls = () => s.calls?.();
    const syncs: number[] = [];
    let syncCalls: number | undefined;
    for (let r = 0; r < ROUNDS; r += 1) {
      await e.withdraw();
      await check(e, [], `${subject.name}, empty`);
      const before = calls();
      syncs.push(await time(() => e.sync(entries)));
      if (before !== undefined) syncCalls = calls()! - before;
      await check(e, fullSet, `${subject.name}, sync`);
    }
    const diffs: number[] = [];
    let diffCalls: number | undefined;
    for (let r = 0; r < ROUNDS; r += 1) {
      const stats = { ...engineStats(e)! };
      const before = calls();
      diffs.push(await time(() => e.apply({ add: added, remove: removed })));
      if (before !== undefined) diffCalls = calls()! - before;
      const after = engineStats(e)!;
      // The figure must be the incremental path, not a fall-back to a full replace.
      if (after.batches !== stats.batches + 1 || after.replaces !== stats.replaces) throw new Error(`${subject.name}: the diff was not applied as one batch`);
      await check(e, diffSet, `${subject.name}, diff`);
      await e.apply({ add: entries.slice(0, DIFF / 2), remove: added.map((a) => a.value) });
      await check(e, fullSet, `${subject.name}, undo`);
    }
    await e.withdraw();
    const row: Row = { name: subject.name, how: subject.how, sync: median(syncs), diff: median(diffs), syncCalls, diffCalls };
    console.log(`${row.name}: sync of ${FULL} ${row.sync.toFixed(1)} ms, diff of ${DIFF} ${row.diff.toFixed(1)} ms`);
    return row;
  } finally {
    await s.stop();
  }
}

/** The floor under every SSH row: one exec round trip of plugin-kit's SshSession on an open connection to a stand-in that answers nothing. */
async function sshExecFloor(): Promise<number> {
  const server = await startSshStandIn({ ...sshAuth, exec: () => '' });
  const session = new SshSession({ host: '127.0.0.1', port: server.port, username: sshAuth.user, password: sshAuth.password, hostKeySha256: server.hostKeySha256, timeoutMs: 30_000 });
  try {
    await session.exec('true'); // connects, untimed
    const xs: number[] = [];
    for (let r = 0; r < 9; r += 1) xs.push(await time(() => session.exec('true')));
    return median(xs);
  } finally {
    await session.close();
    await server.stop();
  }
}

const loadAtStart = loadavg().map((l) => l.toFixed(2)).join(' ');
// As bench/nftables.ts: a higher scheduling priority for this process (enforcers and stand-ins)
// and the tools it starts, so that the machine's other work moves the figures less.
setPriority(0, -10);
const rows: Row[] = [];
for (const subject of subjects) rows.push(await measure(subject));
const floor = await sshExecFloor();
console.log(`ssh exec round trip: ${floor.toFixed(1)} ms`);
const loadAtEnd = loadavg().map((l) => l.toFixed(2)).join(' ');

const ref = rows[0]!;
const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}×`;
const n = (x?: number) => (x === undefined ? '–' : String(x));
const table = [
  `| subject | sync of ${FULL.toLocaleString('en')} into empty, ms | ratio to nftables | requests | diff of ${DIFF} (${DIFF / 2} add, ${DIFF / 2} remove) on ${FULL.toLocaleString('en')}, ms | ratio to nftables | requests |`,
  '|---|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) => `| ${r.name} | ${r.sync.toFixed(1)} | ${ratio(r.sync, ref.sync)} | ${n(r.syncCalls)} | ${r.diff.toFixed(1)} | ${ratio(r.diff, ref.diff)} | ${n(r.diffCalls)} |`),
].join('\n');
const report = `## Appliance enforcers against their stand-ins (bench/appliances.ts)

Run ${new Date().toISOString()}, Node ${process.version}, ${cpus().length} cores; load average (1, 5, 15 min) at the
start ${loadAtStart}, at the end ${loadAtEnd} (the machine is shared: absolute times drift between runs; the
process runs at nice -10). Medians of ${ROUNDS} rounds per subject, subjects one after the other.

Each figure is a call of the enforcer built by the plugin definition's \`create()\` (the engine, the
adapter, the protocol client): \`sync\` of ${FULL.toLocaleString('en')} /32 addresses into an empty target (emptied by
\`withdraw\` before each round, untimed), and \`apply\` of a diff adding ${DIFF / 2} and removing ${DIFF / 2} on those
${FULL.toLocaleString('en')} (checked to be one incremental batch, not a full replace; undone after each round,
untimed). After every timed call the target is read back through the enforcer and must hold
exactly the expected set. "requests" = what the stand-in received for one call (SSH execs summed over
members; API calls for the Management API), from the last round.

**These figures measure the enforcer and its protocol round trips against a stand-in, not a
device.** The stand-ins are the plugins' test servers (\`plugins/*/test/\`), running in this same
Node process over loopback (their CPU time is in the figures); a real router or gateway parses and
applies commands at its own speed, and a real Check Point publish and policy installation takes
seconds to minutes where the stand-in's tasks end after 1 (publish) and 2 (install) \`show-task\`
polls, polled here every 1 ms (\`task_poll_seconds: 0.001\`; the default is 2 s). The nftables row
is the reference: a kernel set in a network namespace on this machine, through its enforcer.

One SSH exec round trip (plugin-kit's \`SshSession\` on an open connection, a stand-in that answers
nothing, median of 9) took ${floor.toFixed(1)} ms in this run: the SSH rows are mostly that figure times
the execs (or CLI lines, for the Cisco rows) one member receives (members are driven in parallel).
The first run of this bench (2026-11-27) found ~180 ms per exec: neither \`SshSession\` nor the
stand-in's ssh2 server set TCP_NODELAY, so every exchange waited on Nagle's algorithm and delayed
ACKs; both set it now. It also found that RouterOS's default batch of 500 \`add\` lines made one
~40 KB exec request, over the 35,000-byte packet RFC 4253 §6.1 guarantees (ssh2's server refused
it); an exec now carries at most 32,000 bytes.

| subject | transport, one operation |
|---|---|
${rows.map((r) => `| ${r.name} | ${r.how} |`).join('\n')}

${table}
`;
console.log(`\n${report}`);
const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'appliances.md');
await mkdir(dirname(out), { recursive: true });
await writeFile(out, report);
console.log(`wrote ${out}`);
