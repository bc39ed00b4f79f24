import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './nginx-instance.ts';
import { waitFor } from './until.ts';

const exec = promisify(execFile);

export interface NamedInstance {
  dir: string;
  /** The DNS port on 127.0.0.1 (UDP and TCP). */
  port: number;
  /** The response policy zone's file, which the enforcer writes. */
  rpzFile: string;
  /** The rndc command line that reloads the policy zone of exactly this named. */
  reloadCommand: string;
  /** With `ipZone`: the second policy zone's file (rpz-ip triggers) and its reload command. */
  ipZone?: { file: string; reloadCommand: string };
  /** `dig` of `name` (type A): the response status (NOERROR, NXDOMAIN …) and the answer's addresses. */
  query(name: string): Promise<{ status: string; answers: string[] }>;
  /** The tail of named's log (stderr). */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts a private BIND 9 `named` in the foreground (its own directory, config, rndc key and
 * loopback ports; never the system's): recursive for 127.0.0.1, authoritative for `zone`
 * (`records`: zone-file lines relative to it) and with the response policy zone `rpzZone`, whose
 * file starts empty (SOA and NS only).
 */
export async function startNamed(options: { zone: string; records: string[]; rpzZone: string; ipZone?: string }): Promise<NamedInstance> {
  const dir = await mkdtemp(join(tmpdir(), 'rampart-named-'));
  const port = await freePort();
  const controlPort = await freePort();
  const soa = ['$TTL 60', '@ IN SOA localhost. hostmaster.localhost. 1 3600 600 86400 60', '@ IN NS localhost.'];
  const rpzFile = join(dir, 'rpz.zone');
  await writeFile(join(dir, 'rndc.key'), `key "rampart-test" { algorithm hmac-sha256; secret "${randomBytes(32).toString('base64')}"; };\n`);
  await writeFile(join(dir, 'local.zone'), [...soa, ...options.records, ''].join('\n'));
  await writeFile(rpzFile, [...soa, ''].join('\n'));
  const ipFile = join(dir, 'rpz-ip.zone');
  if (options.ipZone) await writeFile(ipFile, [...soa, ''].join('\n'));
  const policies = [options.rpzZone, ...(options.ipZone ? [options.ipZone] : [])].map((z) => `zone "${z}" min-update-interval 0;`).join(' ');
  const conf = join(dir, 'named.conf');
  await writeFile(
    conf,
    `include "${dir}/rndc.key";
controls { inet 127.0.0.1 port ${controlPort} allow { 127.0.0.1; } keys { "rampart-test"; }; };
options {
  directory "${dir}";
  pid-file "${dir}/named.pid";
  listen-on port ${port} { 127.0.0.1; };
  listen-on-v6 { none; };
  recursion yes;
  allow-recursion { 127.0.0.1; };
  dnssec-validation no;
  response-policy { ${policies} } qname-wait-recurse no;
};
zone "${options.zone}" { type primary; file "${dir}/local.zone"; };
zone "${options.rpzZone}" { type primary; file "${rpzFile}"; allow-query { none; }; };
${options.ipZone ? `zone "${options.ipZone}" { type primary; file "${ipFile}"; allow-query { none; }; };\n` : ''}`,
  );
  // -g: foreground, logs to stderr, so that this process reaps it when it stops.
  const child = spawn('named', ['-g', '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let running = true;
  void exited.then(() => (running = false));

  async function query(name: string): Promise<{ status: string; answers: string[] }> {
    const { stdout } = await exec('dig', [`@127.0.0.1`, '-p', String(port), '+tries=1', '+time=2', '+noall', '+comments', '+answer', name, 'A']);
    const status = /status: ([A-Z]+)/.exec(stdout)?.[1];
    if (!status) throw new Error(`dig ${name}: no status in ${stdout}`);
    const answers = stdout
      .split('\n')
      .filter((l) => l && !l.startsWith(';'))
      .map((l) => l.split(/\s+/))
      .filter((f) => f[3] === 'A')
      .map((f) => f[4]!);
    return { status, answers };
  }

  try {
    await waitFor(async () => {
      if (!running) throw new Error(`named exited: ${stderr.trim()}`);
      return stderr.includes('running') && (await query(`localhost.${options.zone}`)).status.length > 0;
    }, 'named to answer');
  } catch (err) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    port,
    rpzFile,
    reloadCommand: `rndc -k ${dir}/rndc.key -s 127.0.0.1 -p ${controlPort} reload ${options.rpzZone}`,
    ...(options.ipZone ? { ipZone: { file: ipFile, reloadCommand: `rndc -k ${dir}/rndc.key -s 127.0.0.1 -p ${controlPort} reload ${options.ipZone}` } } : {}),
    query,
    log: () => stderr,
    async stop() {
      if (running) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
