/*
 * The load client in a process of its own: `wrk` when installed (Debian's package), otherwise
 * autocannon's CLI run by plain Node, pinned with `taskset` to its own cores. Its CPU time comes
 * from the shell that waits for it (`times`: user and system time of the finished children).
 * Used by bench/lists.ts.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const AUTOCANNON = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'autocannon', 'autocannon.js');

export interface ClientRun {
  client: 'wrk' | 'autocannon';
  requests: number;
  /** Seconds the run lasted (the client's own figure). */
  seconds: number;
  bytes: number;
  p50: number;
  p99: number;
  /** Non-2xx answers and socket errors. */
  bad: number;
  /** CPU seconds (user + system) the client used. */
  cpuSeconds: number;
}

const hasWrk = spawnSync('sh', ['-c', 'command -v wrk'], { encoding: 'utf8' }).status === 0;
/** The client the runs use. */
export const CLIENT: ClientRun['client'] = hasWrk ? 'wrk' : 'autocannon';

const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/** `1m2.5s` → 62.5. */
const seconds = (t: string) => {
  const m = /^(\d+)m([\d.]+)s$/.exec(t);
  return m ? Number(m[1]) * 60 + Number(m[2]) : Number.NaN;
};

/** Children's user and system seconds from bash's `times` (its second line). */
function childTimes(output: string): number {
  const lines = output.trim().split('\n');
  const [user, system] = lines[lines.length - 1]!.trim().split(/\s+/);
  return seconds(user!) + seconds(system!);
}

/** wrk's duration text (`1.23ms`, `450.00us`, `1.02s`) in ms. */
const wrkMs = (t: string) => {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(t.trim());
  if (!m) return Number.NaN;
  return Number(m[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000 }[m[2] as 'us' | 'ms' | 's' | 'm'];
};

/**
 * One load run of `duration` seconds at `connections` against `url`. `script`: a wrk Lua script
 * (wrk only: autocannon's CLI sends one request), e.g. one that rotates paths and keys.
 */
export function runClient(url: string, o: { connections: number; duration: number; headers?: Record<string, string>; cpus?: string; script?: string }): ClientRun {
  const pin = o.cpus ? `taskset -c ${o.cpus} ` : '';
  const headers = Object.entries(o.headers ?? {});
  if (o.script && !hasWrk) throw new Error('this run needs wrk (a Lua script rotates its requests): apt-get install wrk');
  const command = hasWrk
    ? `${pin}wrk --latency -t 1 -c ${o.connections} -d ${o.duration}s ${o.script ? `-s ${quote(o.script)} ` : ''}${headers.map(([k, v]) => `-H ${quote(`${k}: ${v}`)}`).join(' ')} ${quote(url)}`
    : `${pin}${quote(process.execPath)} ${quote(AUTOCANNON)} -j -c ${o.connections} -d ${o.duration} ${headers.map(([k, v]) => `-H ${quote(`${k}=${v}`)}`).join(' ')} ${quote(url)}`;
  const r = spawnSync('bash', ['-c', `${command}; echo '---'; times`], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  // wrk reports a script that does not load on stderr and then runs without it (GET /): refuse.
  if (hasWrk && r.stderr.trim() !== '') throw new Error(`wrk: ${r.stderr.trim()}`);
  const [out, times] = r.stdout.split('\n---\n');
  const cpuSeconds = childTimes(times ?? '');
  if (!hasWrk) {
    const j = JSON.parse(out!) as { requests: { total: number }; duration: number; throughput: { total: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number };
    return { client: 'autocannon', requests: j.requests.total, seconds: j.duration, bytes: j.throughput.total, p50: j.latency.p50, p99: j.latency.p99, bad: j.non2xx + j.errors, cpuSeconds };
  }
  return { ...parseWrk(out ?? ''), cpuSeconds };
}

/** What `wrk --latency` printed, read: requests, seconds, bytes, p50 and p99 in ms, non-2xx plus socket errors. */
export function parseWrk(text: string): Omit<ClientRun, 'cpuSeconds'> {
  const total = /(\d+) requests in ([\d.]+\w+), ([\d.]+)(\w+) read/.exec(text);
  const unit = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 }[total?.[4] ?? 'B'] ?? 1;
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(text)?.[1] ?? 0);
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  return {
    client: 'wrk',
    requests: Number(total?.[1] ?? 0),
    seconds: wrkMs(total?.[2] ?? '') / 1000,
    bytes: Number(total?.[3] ?? 0) * unit,
    // The latency distribution's own lines: a thread-stats cell such as "79.99%" ends in 99% too.
    p50: wrkMs(/^\s*50%\s+(\S+)/m.exec(text)?.[1] ?? ''),
    p99: wrkMs(/^\s*99%\s+(\S+)/m.exec(text)?.[1] ?? ''),
    bad: non2xx + (errors ? errors.slice(1).reduce((a, b) => a + Number(b), 0) : 0),
  };
}
