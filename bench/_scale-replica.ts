/*
 * One control-plane replica of bench/scale-10m.ts, started as production starts it (`node
 * apps/server/dist/main.mjs`, the bundle `npm start` runs) with its own data directory. Reads its
 * JSON log for the listening line and the IPv4 mirror's `ipv4 list mirror loaded` line, and as
 * soon as it listens asks it, while its mirror still loads, for a look-up and the first list page
 * (answered from SQL then). Not run alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const main = join(dirname(fileURLToPath(import.meta.url)), '..', 'apps', 'server', 'dist', 'main.mjs');

export interface MirrorLoaded {
  rows: number;
  mb: number;
  ms: number;
  /** CPU seconds (user + system) the replica had used from its start until the line. */
  cpuSeconds: number;
}

/** User + system CPU seconds of a process so far (/proc/<pid>/stat, 100 ticks a second). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export interface Replica {
  child: ChildProcess;
  base: string;
  /** Milliseconds from spawn to the listening line. */
  listeningMs: number;
  mirrorLoaded: Promise<MirrorLoaded>;
  /** What the look-up and the first list page answered while the mirror loaded. */
  whileLoading: string;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Polls `probe` until it answers something other than false; rejects after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | false>, timeoutMs: number, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function timed(url: string, key: string): Promise<string> {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { authorization: key } });
  await res.arrayBuffer();
  return `${res.status} in ${Math.round(performance.now() - t0)} ms`;
}

export async function startReplica(env: Record<string, string>, port: number, probe: { lookupPath: string; listPath: string; key: string }): Promise<Replica> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rampart-scale-'));
  const t0 = performance.now();
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, ...env, PORT: String(port), DATA_DIR: dataDir, RAMPART_DEMO: 'false', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let listening: (ms: number) => void;
  let loaded: (m: MirrorLoaded) => void;
  let failed: (e: Error) => void;
  const listeningP = new Promise<number>((res, rej) => {
    listening = res;
    failed = rej;
  });
  const mirrorLoaded = new Promise<MirrorLoaded>((res, rej) => {
    loaded = res;
    child.once('exit', (code) => rej(new Error(`replica on ${port} exited ${code}: ${out.slice(-2000)}`)));
  });
  mirrorLoaded.catch(() => undefined);
  let buffer = '';
  const onData = (b: Buffer) => {
    out = (out + b.toString()).slice(-20_000);
    buffer += b.toString();
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.includes('control plane listening')) listening(Math.round(performance.now() - t0));
      if (line.includes('ipv4 list mirror loaded')) {
        const m = JSON.parse(line) as MirrorLoaded;
        loaded({ rows: m.rows, mb: m.mb, ms: m.ms, cpuSeconds: cpuSeconds(child.pid!) });
      }
      if (line.includes('ipv4 list mirror failed')) failed(new Error(line));
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  child.once('exit', (code) => failed(new Error(`replica on ${port} exited ${code}: ${out.slice(-2000)}`)));
  const listeningMs = await listeningP;
  const base = `http://127.0.0.1:${port}`;
  let state = 'loading';
  void mirrorLoaded.then(() => (state = 'loaded'), () => undefined);
  const lookup = await timed(`${base}${probe.lookupPath}`, probe.key);
  const list = await timed(`${base}${probe.listPath}`, probe.key);
  const whileLoading = `look-up ${lookup}, first page ${list}${state === 'loaded' ? ' (the mirror was ready by then)' : ''}`;
  return {
    child,
    base,
    listeningMs,
    mirrorLoaded,
    whileLoading,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await gone;
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
