import type { ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnNodePinned } from './_pinned.ts';
import { SERVER_RUNTIME } from './_server-bundle.ts';

/** What bench/_ipv4-serve.mjs announces once it listens: its ports, the keys it made, its static files. */
export interface ServeReady {
  app: number;
  readers: string[];
  contributors: string[];
}

/** What bench/_ipv4-serve.mjs takes (BENCH_SERVE). */
export interface ServeSettings {
  url: string;
  orgGids: string[];
  free: boolean;
  /** LIST_CACHE_MB of the server (absent: its default). */
  listCacheMb?: number;
  /** LIST_STREAMS_PER_KEY of the server (absent: its default). */
  listStreamsPerKey?: number;
  /** `taskset -c` CPU list the child runs on (absent: any). */
  cpus?: string;
}

/**
 * Starts bench/_ipv4-serve.mjs (the control plane from its bundle on plain Node, with production's
 * Node flags and malloc settings: apps/server/runtime.json) and resolves once it has announced
 * itself. BENCH_CPU_PROF=<dir> runs it with --cpu-prof.
 * `stop()` ends it with SIGTERM (its profile, if any, is written then).
 */
export async function startIpv4Server(settings: ServeSettings): Promise<{ child: ChildProcess; ready: ServeReady; stop: () => Promise<void> }> {
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const serve = join(dirname(fileURLToPath(import.meta.url)), '_ipv4-serve.mjs');
  const child = spawnNodePinned(serve, { cpus: settings.cpus, nodeArgs: [...SERVER_RUNTIME.nodeArgs, ...prof], env: { ...process.env, ...SERVER_RUNTIME.env, BENCH_SERVE: JSON.stringify(settings) } });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM'));
  };
  try {
    const ready = await announced<ServeReady>(child, 'server');
    return { child, ready, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The first JSON line a child process writes on stdout (its ports, keys…); rejects if it exits first. */
export function announced<T>(child: ChildProcess, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const line = buffer.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line) as T);
    });
    child.on('exit', (code) => reject(new Error(`${what} exited with ${code}`)));
  });
}
