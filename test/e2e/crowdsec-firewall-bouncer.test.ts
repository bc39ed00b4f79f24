import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastSecondAtOrAbove } from '@rampart/scoring';
import { NetnsLab, systemGate } from '@rampart/plugin-kit/testing';
import { buildApp, createTestDatabase, openStore, registerAgent, seedOrg, sqlOf, testConfig, type Store, type TestOrg } from '@rampart/server/testing';
import { tempDir, waitFor } from './support.ts';

/*
 * Debian's CrowdSec firewall bouncer (crowdsec-firewall-bouncer 0.0.25, the real binary) against
 * Rampart's CrowdSec-compatible decisions API (issue 32 item 1), in nftables mode and in
 * iptables + ipset mode (`ipset_type: nethash`):
 *
 *   host (test: control plane on 10.x.y.1) ── veth ── fw (10.x.y.2, 45.61.7.1: the bouncer)
 *                                                      └─ veth ── cli (45.61.7.10, 45.61.7.200)
 *
 * After start-up and after each change (whitelist, blacklist, ttl expiry, score rise, decay,
 * a longer listing) the bouncer's set equals `/ipv4/{threshold}` for its agent key, and no
 * element's kernel timeout ends before Rampart stops listing it; a packet from a newly
 * blacklisted source is dropped in the namespace. nftables mode of 0.0.25 inserts a Range as its
 * first address only (its set has no interval flag): the comparison maps networks so there, and
 * the ipset mode compares networks as they are.
 *
 * Timings are printed as figures ([figure] lines), never asserted: the waits have deadlines only.
 */

const run = promisify(execFile);
const gate = systemGate('CrowdSec firewall bouncer in a network namespace', { commands: ['crowdsec-firewall-bouncer', 'nft', 'ipset', 'ip'], root: true });

type Mode = 'nftables' | 'iptables';
const THRESHOLD = 100;
const UPDATE_SECONDS = 1;
const PORT = 8080;
const SOURCE = '45.61.7.10';
const UNLISTED = '45.61.7.200';
const FW_LAN = '45.61.7.1';
/** The longest duration Rampart sends (ipset's limit); entries listed longer are refreshed halfway. */
const MAX_DURATION_MS = 2_147_482_000;

interface KernelEntry {
  value: string;
  /** Milliseconds left, as the kernel shows them (ipset: whole seconds, rounded down). */
  leftMs: number;
  /** Resolution of `leftMs`. */
  slackMs: number;
}

/** `4166d15h59m51s424ms` → milliseconds. */
function nftDurationMs(text: string): number {
  const units: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+)(ms|d|h|m|s)/g)) total += Number(n) * units[unit!]!;
  return total;
}

/** An iptables binary for the bouncer: the alternatives' `iptables`, or iptables-nft under that name. */
async function iptablesPath(dir: string): Promise<string> {
  const onPath = (process.env.PATH ?? '').split(':').concat('/usr/sbin', '/sbin').some((d) => existsSync(join(d, 'iptables')));
  if (onPath) return '';
  const nft = ['/usr/sbin/iptables-nft', '/sbin/iptables-nft'].find((p) => existsSync(p));
  if (!nft) throw new Error('no iptables and no iptables-nft: install iptables');
  await mkdir(join(dir, 'bin'), { recursive: true });
  await symlink(nft, join(dir, 'bin', 'iptables'));
  return join(dir, 'bin');
}

describe.skipIf(gate).each<Mode>(['nftables', 'iptables'])('crowdsec-firewall-bouncer 0.0.25 (%s mode) against Rampart', (mode) => {
  const lab = new NetnsLab();
  const hostDev = `rmc${randomBytes(3).toString('hex')}`;
  const subnet = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 250)}`;
  const hostIp = `${subnet}.1`;
  let fw: string;
  let cli: string;
  let store: Store;
  let drop = async () => {};
  let app: FastifyInstance;
  let org: TestOrg;
  let other: TestOrg;
  let agentKey: string;
  let bouncer: ChildProcess | undefined;
  let dir: { path: string; remove(): Promise<void> };
  /** Where the bouncer finds `iptables` when only iptables-nft is installed ('' when on PATH). */
  let binDir = '';
  const figures: string[] = [];

  const api = (method: 'GET' | 'POST' | 'PUT', url: string, key: string, payload?: unknown) => app.inject({ method, url: `/api/v1${url}`, headers: { authorization: key }, ...(payload ? { payload } : {}) });
  const report = async (who: TestOrg, ip: string, extra: Record<string, unknown> = {}) => {
    const res = await api('POST', '/ips', who.keys.contributor, { ip, confidence: 1, source: 'ssh_log', ...extra });
    expect(res.statusCode, res.body).toBeLessThan(300);
  };
  /** `/ipv4/{threshold}` for the bouncer's own agent key, as the bouncer's set must read it. */
  const listed = async (): Promise<string[]> => {
    const res = await api('GET', `/ipv4/${THRESHOLD}`, agentKey);
    expect(res.statusCode, res.body).toBe(200);
    const values = res.body.split('\n').filter(Boolean);
    return [...new Set(mode === 'nftables' ? values.map((v) => v.split('/')[0]!) : values)].sort();
  };
  /** What the bouncer put in the kernel, with each element's time left. */
  const kernel = async (): Promise<KernelEntry[]> => {
    if (mode === 'nftables') {
      const { stdout } = await lab.exec(fw, ['nft', 'list', 'set', 'ip', 'crowdsec', 'crowdsec-blacklists']);
      return [...stdout.matchAll(/(\d+\.\d+\.\d+\.\d+(?:\/\d+)?) timeout \S+ expires (\S+?)[,\s}]/g)].map((m) => ({ value: m[1]!, leftMs: nftDurationMs(m[2]!), slackMs: 1 }));
    }
    const { stdout } = await lab.exec(fw, ['ipset', 'list', 'crowdsec-blacklists']);
    const members = stdout.split('Members:')[1] ?? '';
    return [...members.matchAll(/^(\S+) timeout (\d+)/gm)].map((m) => ({ value: m[1]!, leftMs: Number(m[2]) * 1000, slackMs: 1000 }));
  };
  const held = async () => (await kernel()).map((e) => e.value).sort();

  /** The first second Rampart no longer lists a value for this agent, from its own records (Infinity: no end). */
  async function rampartUntil(value: string): Promise<number> {
    const first = value.split('/')[0]!;
    const res = await api('GET', `/ips/${first}`, org.keys.reader);
    const records = (res.json() as { body: Array<{ ip: string; score: number; ts: number | string; decision: number | null; ttl: number | null }> }).body;
    const candidates = mode === 'nftables' ? records : records.filter((r) => r.ip === value || `${r.ip}/32` === value || r.ip === `${value}/32`);
    let until = -Infinity;
    for (const r of candidates) {
      if (r.decision === 1) until = Math.max(until, r.ttl ?? Infinity);
      const last = r.score >= 1 ? lastSecondAtOrAbove(r.score, THRESHOLD) : -1;
      if (last === Infinity) until = Infinity;
      else if (last >= 0) until = Math.max(until, Number(r.ts) + last + 1);
    }
    return until;
  }

  /**
   * Waits until the bouncer's set equals the list, then checks every element's kernel timeout
   * against the end Rampart's records give it. Returns the convergence time.
   */
  async function converged(step: string, since: number): Promise<string[]> {
    let list: string[] = [];
    await waitFor(`${mode}: bouncer set = /ipv4/${THRESHOLD} after ${step}`, async () => {
      list = await listed();
      const set = await held();
      return JSON.stringify(set) === JSON.stringify(list);
    }, 60_000, 100);
    const took = Date.now() - since;
    const before = Date.now();
    const entries = await kernel();
    const after = Date.now();
    expect(entries.map((e) => e.value).sort()).toEqual(list);
    // The kernel shows the time left at a moment between `before` and `after`: an element ends
    // between before + left and after + left + the display's resolution (ipset: whole seconds,
    // rounded down, so the interval printed below spans a second there).
    let low = Infinity;
    let high = Infinity;
    for (const e of entries) {
      const until = (await rampartUntil(e.value)) * 1000;
      const capped = until > before + MAX_DURATION_MS / 2;
      // Listed past half the longest duration: the kernel must hold it at least that long (it is refreshed then).
      const needed = capped ? before + MAX_DURATION_MS / 2 : until;
      expect(after + e.leftMs + e.slackMs, `${e.value}: kernel timeout ends before Rampart stops listing it`).toBeGreaterThanOrEqual(needed);
      if (!capped) {
        low = Math.min(low, before + e.leftMs - until);
        high = Math.min(high, after + e.leftMs + e.slackMs - until);
      }
    }
    const margin = low === Infinity ? 'none ends within the longest duration' : `${low}..${high} ms`;
    const line = `${mode}: ${step}: set = /ipv4/${THRESHOLD} (${list.length} entries) ${took} ms after the change (update_frequency ${UPDATE_SECONDS}s); least kernel end - Rampart's end: ${margin}`;
    figures.push(line);
    console.log(`[figure] ${line}`);
    return list;
  }

  beforeAll(async () => {
    dir = await tempDir('rampart-bouncer-');
    fw = await lab.namespace('fw');
    cli = await lab.namespace('cli');
    // The control plane's side of the API link is in the test's own namespace.
    await run('ip', ['link', 'add', hostDev, 'type', 'veth', 'peer', 'name', 'api', 'netns', fw]);
    await run('ip', ['addr', 'add', `${hostIp}/30`, 'dev', hostDev]);
    await run('ip', ['link', 'set', hostDev, 'up']);
    await lab.exec(fw, ['ip', 'addr', 'add', `${subnet}.2/30`, 'dev', 'api']);
    await lab.exec(fw, ['ip', 'link', 'set', 'api', 'up']);
    await lab.link({ ns: cli, dev: 'eth0', addresses: [`${SOURCE}/24`, `${UNLISTED}/24`] }, { ns: fw, dev: 'lan', addresses: [`${FW_LAN}/24`] });
    await lab.listen(fw, PORT);

    if (process.env.DATABASE_URL) {
      const db = await createTestDatabase();
      store = await openStore({ databaseUrl: db.url });
      drop = () => db.drop();
    } else {
      store = await openStore({});
    }
    app = await buildApp({ config: testConfig({ authCacheSeconds: 0 }), store });
    await app.listen({ host: hostIp, port: 0 });
    const port = (app.server.address() as { port: number }).port;
    org = await seedOrg(store, { credits: 1_000_000, trust: 1 });
    other = await seedOrg(store, { credits: 1_000_000, trust: 1 });
    const agent = await registerAgent(app, org.keys.admin, { score_threshold: THRESHOLD });
    agentKey = agent.token;

    // Listed from the start: three reported addresses and a reported network.
    for (const ip of ['45.77.1.1', '45.77.1.2', '45.77.1.3', '45.78.0.0/24']) await report(org, ip);
    // Below the threshold (one organization, confidence 0.5: s0 69).
    await report(org, '45.77.2.1', { confidence: 0.5 });

    binDir = mode === 'iptables' ? await iptablesPath(dir.path) : '';
    const config = [
      `mode: ${mode}`,
      `pid_dir: ${dir.path}/`,
      `update_frequency: ${UPDATE_SECONDS}s`,
      'daemonize: false',
      'log_mode: stdout',
      'log_level: info',
      `api_url: http://${hostIp}:${port}/api/v1/crowdsec/`,
      `api_key: ${agentKey}`,
      'insecure_skip_verify: false',
      'disable_ipv6: true',
      'deny_action: DROP',
      'deny_log: false',
      'supported_decisions_types:',
      '  - ban',
      'blacklists_ipv4: crowdsec-blacklists',
      'blacklists_ipv6: crowdsec6-blacklists',
      'ipset_type: nethash',
      'iptables_chains:',
      '  - INPUT',
      'nftables:',
      '  ipv4:',
      '    enabled: true',
      '    set-only: false',
      '    table: crowdsec',
      '    chain: crowdsec-chain',
      '  ipv6:',
      '    enabled: false',
      '    set-only: false',
      '    table: crowdsec6',
      '    chain: crowdsec6-chain',
      'prometheus:',
      '  enabled: false',
      '  listen_addr: 127.0.0.1',
      '  listen_port: 60601',
    ].join('\n');
    await writeFile(join(dir.path, 'bouncer.yaml'), `${config}\n`, { mode: 0o600 });
  }, 120_000);

  afterAll(async () => {
    if (bouncer && bouncer.exitCode === null) bouncer.kill('SIGKILL');
    await lab.destroy();
    await run('ip', ['link', 'del', hostDev]).catch(() => undefined);
    await app?.close();
    await store?.close();
    await drop();
    console.log(`[figure] ${mode} summary:\n  ${figures.join('\n  ')}`);
    await dir?.remove();
  });

  it('converges on /ipv4/{threshold} at start-up, with honest kernel timeouts', async () => {
    const env = { ...process.env, PATH: [binDir, process.env.PATH ?? '', '/usr/sbin', '/sbin'].filter(Boolean).join(':') };
    const started = Date.now();
    bouncer = spawn('ip', ['netns', 'exec', fw, 'crowdsec-firewall-bouncer', '-c', join(dir.path, 'bouncer.yaml')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = createWriteStream(join(dir.path, 'bouncer.log'));
    bouncer.stdout!.pipe(log);
    bouncer.stderr!.pipe(log);
    await converged('start-up', started);
    expect(bouncer.exitCode).toBeNull();
    const set = await held();
    expect(set).toContain(mode === 'nftables' ? '45.78.0.0' : '45.78.0.0/24');
    expect(set).not.toContain('45.77.2.1');
    // Each poll is the agent's check-in, as a bouncer (the test's own /ipv4 calls check in as `ipv4`
    // with the same key: the bouncer's next poll, within update_frequency, shows again).
    const via = async () => ((await api('GET', '/agents', org.keys.admin)).json() as Array<{ last_checkin_via: string | null }>)[0]!.last_checkin_via;
    expect(await waitFor('a check-in via bouncer', async () => (await via()) === 'bouncer', 30_000, 100)).toBe(true);
  }, 120_000);

  it('drops a newly blacklisted source in the namespace; another source passes', async () => {
    expect(await lab.probeUntil('open', cli, SOURCE, FW_LAN, PORT)).toBe('open');
    const t0 = Date.now();
    await report(org, SOURCE, { decision: 1 });
    await converged('blacklist', t0);
    expect(await lab.probe(cli, SOURCE, FW_LAN, PORT)).toBe('timeout');
    expect(await lab.probeUntil('open', cli, UNLISTED, FW_LAN, PORT)).toBe('open');
  }, 120_000);

  it('withdraws a whitelisted address', async () => {
    const t0 = Date.now();
    await report(org, '45.77.1.2', { decision: 0 });
    await converged('whitelist', t0);
    expect(await held()).not.toContain('45.77.1.2');
  }, 120_000);

  it('adds an address whose score rises above the threshold, and extends one whose listing grows', async () => {
    const [before] = (await kernel()).filter((e) => e.value === '45.77.1.1');
    const t0 = Date.now();
    await report(other, '45.77.2.1');
    // A second organization re-anchors 45.77.1.1 with a higher score: it stays listed longer.
    await report(other, '45.77.1.1');
    await converged('score rise', t0);
    expect(await held()).toContain('45.77.2.1');
    const [after] = (await kernel()).filter((e) => e.value === '45.77.1.1');
    // Sent again in `deleted` and `new`: the kernel holds it with the longer timeout.
    expect(after!.leftMs - before!.leftMs).toBeGreaterThan(24 * 3_600_000);
  }, 120_000);

  it('follows a ttl expiry and a decay below the threshold', async () => {
    const now = Math.floor(Date.now() / 1000);
    // A blacklist on an address whose score alone is below the threshold, for a few seconds.
    await report(org, '45.77.3.1', { confidence: 0.5, decision: 1, ttl: now + 15 });
    // A reported address whose live score falls below the threshold a few seconds from now.
    const s0 = 300;
    const ts = now + 17 - lastSecondAtOrAbove(s0, THRESHOLD) - 1;
    await sqlOf(store).query(
      `insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts, members, events, sources) values ($1, '45.77.4.1/32', false, $2, $3, $3, 1, 1, '{ssh_log}')`,
      [`RMP-RULE-GID-DECAY${randomBytes(4).toString('hex')}`, s0, ts],
    );
    const t0 = Date.now();
    expect(await converged('ttl and decaying score listed', t0)).toEqual(expect.arrayContaining(['45.77.3.1', '45.77.4.1']));
    await waitFor('ttl end and decay', async () => Math.floor(Date.now() / 1000) >= now + 18, 30_000, 200);
    await converged('ttl expiry and decay', (now + 17) * 1000);
    expect(await held()).not.toContain('45.77.3.1');
    expect(await held()).not.toContain('45.77.4.1');
    const log = await readFile(join(dir.path, 'bouncer.log'), 'utf8');
    expect(log).not.toMatch(/level=(error|fatal)/);
  }, 120_000);
});
