/*
 * What the benchmarks with every side in a process of its own share (bench/lists.ts,
 * bench/lookups.ts): the serving processes pinned to core 0 and the load client to core 1 when
 * the machine has two cores, and one side's run with its CPU time and the load when it began.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { cpus } from 'node:os';
import { procStatFields } from './_cpu.ts';
import type { ClientRun } from './_load-client.ts';

/** Two cores or more: the server side on core 0, the client on core 1. */
export const PINNED = cpus().length >= 2;
export const SERVER_CPUS = PINNED ? '0' : undefined;
export const CLIENT_CPUS = PINNED ? '1' : undefined;
/** Clock ticks per second (USER_HZ). */
export const TICK = 100;

/** One side's load run: what the client measured, and what the serving process spent. */
export interface Side {
  run: ClientRun;
  /** CPU seconds of the serving process during the run. */
  cpu: number;
  /** CPU seconds of the bench's PostgreSQL cluster during the run. */
  pg: number;
  /** Load average (1 min) when the run began. */
  load: number;
}

/** utime + stime of a process, in clock ticks. */
export const processTicks = (pid: number): number => {
  const f = procStatFields(pid);
  return f ? Number(f[11]) + Number(f[12]) : 0;
};

export const rps = (s: Side): number => s.run.requests / s.run.seconds;

/** Plain Node running `script` (node flags in `nodeArgs` before it, its own in `args` after), pinned with taskset to `cpus` when given. */
export function spawnNodePinned(script: string, o: { cpus?: string | undefined; nodeArgs?: string[]; args?: string[]; env: NodeJS.ProcessEnv; stdio?: SpawnOptions['stdio'] }): ChildProcess {
  const argv = [...(o.nodeArgs ?? []), script, ...(o.args ?? [])];
  const stdio = o.stdio ?? ['ignore', 'pipe', 'inherit'];
  return o.cpus ? spawn('taskset', ['-c', o.cpus, process.execPath, ...argv], { stdio, env: o.env }) : spawn(process.execPath, argv, { stdio, env: o.env });
}
