import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/store/index.ts';
import { registerAgent } from './support/agents.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/*
 * The real client: Debian's `crowdsec` (1.4.6) as an agent only (`-no-api`), reading a generated
 * auth.log with its packaged syslog and sshd parsers and ssh-bf / ssh-slow-bf scenarios, logging
 * in to Rampart's watcher API with an agent's gaid and key and pushing its alerts there. The
 * addresses its alerts name must arrive as reports of the organization; they are compared with the
 * addresses crowdsec names in its own log ("Ip … performed '…'") and with the generator's truth.
 */

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const GENERATOR = process.env.RAMPART_GEN_AUTHLOG ?? resolve(repoRoot, '../shared/bench/gen-authlog.py');
const HUB = '/usr/share/crowdsec/hub';
const PATTERNS = '/etc/crowdsec/patterns';
/** The postoverflow whitelist the README tells agents reporting to Rampart to install. */
const WHITELIST = fileURLToPath(new URL('../crowdsec/rampart-reportable.yaml', import.meta.url));
/** Attackers Rampart would refuse (carrier-grade NAT, IPv6): the whitelist keeps them in the agent. */
const UNREPORTABLE = ['100.64.7.7', '2001:db8::7'];

function missing(): string | undefined {
  const reasons: string[] = [];
  if (spawnSync('crowdsec', ['-version'], { stdio: 'ignore' }).status !== 0) reasons.push('no crowdsec binary (apt-get install crowdsec)');
  if (!existsSync(join(HUB, 'scenarios/crowdsecurity/ssh-bf.yaml'))) reasons.push(`no packaged hub at ${HUB}`);
  if (!existsSync(PATTERNS)) reasons.push(`no grok patterns at ${PATTERNS}`);
  if (!existsSync(GENERATOR)) reasons.push(`no generator at ${GENERATOR}`);
  if (spawnSync('python3', ['--version'], { stdio: 'ignore' }).status !== 0) reasons.push('no python3');
  return reasons.length > 0 ? reasons.join('; ') : undefined;
}

const why = missing();
if (why && process.env.CI) throw new Error(`CI must install crowdsec and python3 (and provide gen-authlog.py): ${why}`);
if (why) console.warn(`crowdsec agent test skipped: ${why}`);

/** A private crowdsec configuration: the packaged parsers and ssh scenarios, data in `dir`. */
function crowdsecConfig(dir: string, url: string, login: string, password: string): string {
  const put = (from: string, to: string) => {
    mkdirSync(join(dir, to, '..'), { recursive: true });
    copyFileSync(from, join(dir, to));
  };
  put(join(HUB, 'parsers/s00-raw/crowdsecurity/syslog-logs.yaml'), 'parsers/s00-raw/syslog-logs.yaml');
  put(join(HUB, 'parsers/s01-parse/crowdsecurity/sshd-logs.yaml'), 'parsers/s01-parse/sshd-logs.yaml');
  put(join(HUB, 'parsers/s02-enrich/crowdsecurity/dateparse-enrich.yaml'), 'parsers/s02-enrich/dateparse-enrich.yaml');
  put(join(HUB, 'parsers/s02-enrich/crowdsecurity/whitelists.yaml'), 'parsers/s02-enrich/whitelists.yaml');
  put(join(HUB, 'scenarios/crowdsecurity/ssh-bf.yaml'), 'scenarios/ssh-bf.yaml');
  put(join(HUB, 'scenarios/crowdsecurity/ssh-slow-bf.yaml'), 'scenarios/ssh-slow-bf.yaml');
  put(WHITELIST, 'postoverflows/s01-whitelist/rampart-reportable.yaml');
  // An unconfigured package leaves its files as *.dpkg-new.
  mkdirSync(join(dir, 'patterns'), { recursive: true });
  for (const name of readdirSync(PATTERNS)) copyFileSync(join(PATTERNS, name), join(dir, 'patterns', name.replace(/\.dpkg-new$/, '')));
  mkdirSync(join(dir, 'data'), { recursive: true });
  writeFileSync(join(dir, 'simulation.yaml'), 'simulation: false\nexclusions: []\n');
  writeFileSync(join(dir, 'acquis.yaml'), '');
  writeFileSync(join(dir, 'local_api_credentials.yaml'), `url: ${url}\nlogin: ${login}\npassword: ${password}\n`, { mode: 0o600 });
  const config = [
    'common:',
    '  daemonize: false',
    '  log_media: stdout',
    '  log_level: info',
    `  working_dir: ${dir}`,
    'config_paths:',
    `  config_dir: ${dir}/`,
    `  data_dir: ${dir}/data/`,
    `  simulation_path: ${dir}/simulation.yaml`,
    `  hub_dir: ${HUB}/`,
    `  index_path: ${HUB}/.index.json`,
    'crowdsec_service:',
    `  acquisition_path: ${dir}/acquis.yaml`,
    '  parser_routines: 1',
    'api:',
    '  client:',
    '    insecure_skip_verify: false',
    `    credentials_path: ${dir}/local_api_credentials.yaml`,
    'prometheus:',
    '  enabled: false',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'config.yaml'), config);
  return join(dir, 'config.yaml');
}

/** Runs crowdsec over the log until it exits (it stops once the file is read and its alerts are pushed). */
function runCrowdsec(config: string, log: string, deadlineMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn('crowdsec', ['-c', config, '-no-api', '-dsn', `file://${log}`, '-type', 'syslog'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`crowdsec did not finish in ${deadlineMs} ms:\n${output.slice(-4000)}`));
    }, deadlineMs);
    child.on('error', fail);
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

interface Truth {
  ip: string;
  failures: number;
  max_failures_600s: number;
}

function readTruth(csv: string): Truth[] {
  const [header, ...lines] = readFileSync(csv, 'utf8').trim().split('\n');
  const cols = header!.split(',');
  return lines.map((line) => {
    const v = line.split(',');
    const at = (name: string) => v[cols.indexOf(name)]!;
    return { ip: at('ip'), failures: Number(at('failures')), max_failures_600s: Number(at('max_failures_600s')) };
  });
}

describe.skipIf(why)('a real CrowdSec agent (crowdsec -no-api) reporting to Rampart', () => {
  let dir: string;
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let base: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rampart-crowdsec-'));
    store = await openStore({});
    app = await testApp(store);
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    acme = await seedOrg(store, { name: `Acme crowdsec ${process.pid}` });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await store?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('turns the alerts of its ssh scenarios over a generated auth.log into reports of the organization', async () => {
    const log = join(dir, 'auth.log');
    const gen = spawnSync('python3', [GENERATOR, '-n', '6000', '--seed', '32', '--attackers', '12', '-o', log], { encoding: 'utf8' });
    expect(gen.status, gen.stderr).toBe(0);
    const truth = readTruth(join(dir, 'auth.truth.csv'));
    // Eight failed passwords in eight seconds from each unreportable address, after the generated lines.
    const extra = UNREPORTABLE.flatMap((ip, k) =>
      Array.from({ length: 8 }, (_, i) => `Mar  1 23:5${k}:0${i} bastion-01 sshd[${4000 + k * 10 + i}]: Failed password for root from ${ip} port ${40000 + i} ssh2`),
    );
    writeFileSync(log, `${readFileSync(log, 'utf8')}${extra.join('\n')}\n`);

    const agent = await registerAgent(app, acme.keys.admin);
    const config = crowdsecConfig(join(dir, 'cs'), `${base}/api/v1/crowdsec/`, agent.gaid, agent.token);
    const run = await runCrowdsec(config, log, 300_000);
    expect(run.output).not.toMatch(/while pushing (leftovers )?to api/);
    expect(run.output).not.toMatch(/authenticate watcher/);

    // What crowdsec says it saw: "Ip 203.0.113.7 performed 'crowdsecurity/ssh-bf' (6 events over 3s) at …".
    // Whitelisted overflows are logged too, then "[<message>] is whitelisted, skip.".
    const whitelisted = new Set([...run.output.matchAll(/\[Ip ([0-9a-f.:]+) performed '[^']+'[^\]]*\] is whitelisted, skip/g)].map((m) => m[1]!));
    expect([...whitelisted].sort()).toEqual([...UNREPORTABLE].sort());
    const named = new Set([...run.output.matchAll(/Ip (\d+\.\d+\.\d+\.\d+) performed '([^']+)'/g)].map((m) => m[1]!).filter((ip) => !whitelisted.has(ip)));
    expect(named.size).toBeGreaterThan(0);
    const unreported = await app.inject({ url: '/api/v1/ips/100.64.7.7', headers: { authorization: acme.keys.reader } });
    expect(unreported.json().body).toEqual([]);

    // What Rampart holds for the organization: a look-up per address.
    const reported = new Set<string>();
    for (const ip of new Set([...named, ...truth.map((t) => t.ip)])) {
      const res = await app.inject({ url: `/api/v1/ips/${ip}`, headers: { authorization: acme.keys.reader } });
      expect(res.statusCode).toBe(200);
      const records = (res.json() as { body: Array<{ ip: string; sources?: string[] }> }).body;
      if (records.length > 0) reported.add(ip);
    }
    expect([...reported].sort()).toEqual([...named].sort());
    // Every address crowdsec named is an attacker of the generator's truth.
    const truthIps = new Set(truth.map((t) => t.ip));
    expect([...named].filter((ip) => !truthIps.has(ip))).toEqual([]);

    const agents = (await app.inject({ url: '/api/v1/agents', headers: { authorization: acme.keys.admin } })).json() as Array<{ gaid: string; last_checkin_via: string | null }>;
    expect(agents.find((a) => a.gaid === agent.gaid)?.last_checkin_via).toBe('crowdsec_watcher');

    const detected = truth.filter((t) => named.has(t.ip));
    console.log(
      `crowdsec alerts vs truth: ${named.size} addresses named by crowdsec, ${reported.size} reported in Rampart, ` +
        `${truth.length} attackers in the truth (${truth.filter((t) => t.failures >= 6).length} with >= 6 failures); ` +
        `missed: ${truth.filter((t) => !named.has(t.ip)).map((t) => `${t.ip}(${t.failures} failures, ${t.max_failures_600s} in 600 s)`).join(' ') || 'none'}; ` +
        `smallest detected: ${Math.min(...detected.map((t) => t.failures))} failures`,
    );
  }, 400_000);
});
