import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { runArgv, runArgvChecked } from '../exec.ts';

/*
 * Throw-away hosts for packet-filter tests: network namespaces joined by veth pairs, a TCP
 * listener inside one, and a TCP probe from a chosen source address inside another. Only Node
 * and iproute2 are needed (no ping, no netcat). Everything is removed by `destroy()`.
 */

export type ProbeResult = 'open' | 'timeout' | 'refused';

const LISTENER = `
const net = require('node:net');
net.createServer((s) => s.end('ok')).listen(Number(process.argv[1]), '0.0.0.0', () => console.log('ready'));
`;

const PROBE = `
const net = require('node:net');
const [host, port, localAddress, ms] = process.argv.slice(1);
const s = net.connect({ host, port: Number(port), localAddress });
const done = (r) => { console.log(r); s.destroy(); process.exit(0); };
s.setTimeout(Number(ms), () => done('timeout'));
s.on('data', () => done('open'));
s.on('error', (e) => done(e.code === 'ECONNREFUSED' ? 'refused' : 'timeout'));
`;

export interface VethEnd {
  ns: string;
  /** Interface name inside `ns`. */
  dev: string;
  /** Addresses with prefix, e.g. `198.51.100.1/24`. */
  addresses?: string[];
}

export class NetnsLab {
  readonly #id = randomBytes(3).toString('hex');
  readonly #namespaces: string[] = [];
  readonly #children: ChildProcess[] = [];

  /** Creates a namespace named after this lab (`rmp<id>-<role>`) with loopback up. */
  async namespace(role: string): Promise<string> {
    const name = `rmp${this.#id}-${role}`;
    await runArgvChecked(['ip', 'netns', 'add', name]);
    this.#namespaces.push(name);
    await this.exec(name, ['ip', 'link', 'set', 'lo', 'up']);
    return name;
  }

  /** Runs a command inside `ns`; throws on a non-zero exit. */
  exec(ns: string, argv: readonly string[], input?: string) {
    return runArgvChecked(['ip', 'netns', 'exec', ns, ...argv], { input, timeoutMs: 120_000 });
  }

  /** Joins two namespaces with a veth pair, addresses both ends and brings them up. */
  async link(a: VethEnd, b: VethEnd): Promise<void> {
    await runArgvChecked(['ip', '-n', a.ns, 'link', 'add', a.dev, 'type', 'veth', 'peer', 'name', b.dev, 'netns', b.ns]);
    for (const end of [a, b]) {
      for (const address of end.addresses ?? []) await this.exec(end.ns, ['ip', 'addr', 'add', address, 'dev', end.dev]);
      await this.exec(end.ns, ['ip', 'link', 'set', end.dev, 'up']);
    }
  }

  /** Starts a TCP listener inside `ns` that answers `ok`; resolves once it listens. */
  async listen(ns: string, port: number): Promise<void> {
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', LISTENER, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#children.push(child);
    await new Promise<void>((resolve, reject) => {
      let err = '';
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      child.on('exit', (code) => reject(new Error(`listener in ${ns} exited with ${code}: ${err}`)));
    });
  }

  /** One TCP connect from `source` (an address of `ns`) to `host:port`. */
  async probe(ns: string, source: string, host: string, port: number, timeoutMs = 1000): Promise<ProbeResult> {
    const result = await this.exec(ns, [process.execPath, '-e', PROBE, host, String(port), source, String(timeoutMs)]);
    return result.stdout.trim() as ProbeResult;
  }

  /**
   * Probes until the answer is `want` or the deadline passes; returns the last answer. Used for
   * "passes" (a fresh veth may need a moment for neighbour discovery); a "dropped" check is one
   * probe whose timeout is the assertion.
   */
  async probeUntil(want: ProbeResult, ns: string, source: string, host: string, port: number, deadlineMs = 10_000): Promise<ProbeResult> {
    const end = Date.now() + deadlineMs;
    let last: ProbeResult;
    do {
      last = await this.probe(ns, source, host, port);
    } while (last !== want && Date.now() < end);
    return last;
  }

  async destroy(): Promise<void> {
    for (const child of this.#children) if (child.exitCode === null) child.kill('SIGKILL');
    for (const ns of this.#namespaces.splice(0)) await runArgv(['ip', 'netns', 'del', ns]);
  }
}
