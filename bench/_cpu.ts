/*
 * CPU time per request of each side of a load run, from /proc: the serving process, the
 * autocannon client (the bench process itself) and the bench's own PostgreSQL cluster
 * (bench/_pg-cluster.ts: its postmaster and children, never another PostgreSQL on the machine),
 * and the share of the machine left idle. On a 2-core machine shared by all three, this says which
 * side bounds a throughput ratio. Used by bench/ipv4.ts and bench/indicators.ts.
 */
import { readFileSync } from 'node:fs';

export interface CpuPerRequest {
  /** µs of CPU per answered request. */
  server: number;
  client: number;
  postgres: number;
  idlePercent: number;
}

export interface CpuTicks {
  server: number;
  client: number;
  postgres: number;
  busy: number;
  all: number;
}

/**
 * Fields of /proc/<pid>/stat after the command name, null once the process is gone: [0] state,
 * [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime (clock ticks; proc(5)).
 */
export function procStatFields(pid: number | string): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** utime + stime of one process (all its threads), in clock ticks; 0 once it is gone. */
function processTicks(pid: number | 'self'): number {
  const fields = procStatFields(pid);
  return fields ? Number(fields[11]) + Number(fields[12]) : 0;
}

/** `postgresTicks`: the bench cluster's CPU ticks so far (PgCluster.cpuTicks). */
export function cpuSnapshot(serverPid: number, postgresTicks: () => number): CpuTicks {
  const machine = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const idle = machine[3]! + machine[4]!;
  const all = machine.reduce((a, b) => a + b, 0);
  return { server: processTicks(serverPid), client: processTicks('self'), postgres: postgresTicks(), busy: all - idle, all };
}

/** Ticks are 1/100 s (USER_HZ); over seconds of load the 10 ms grain is below 1%. */
export function cpuPerRequest(before: CpuTicks, after: CpuTicks, requests: number): CpuPerRequest {
  const per = (ticks: number) => (ticks * 10_000) / Math.max(1, requests);
  return {
    server: per(after.server - before.server),
    client: per(after.client - before.client),
    postgres: per(after.postgres - before.postgres),
    idlePercent: 100 * (1 - (after.busy - before.busy) / Math.max(1, after.all - before.all)),
  };
}

export function cpuText(cpu: CpuPerRequest): string {
  return `CPU per request: server ${Math.round(cpu.server)} µs, client ${Math.round(cpu.client)} µs, PostgreSQL ${Math.round(cpu.postgres)} µs; machine ${Math.round(cpu.idlePercent)}% idle`;
}

export const CPU_COLUMNS = 'CPU µs/request: server | client | PostgreSQL | machine idle';

export function cpuCells(cpu: CpuPerRequest): string {
  return `${Math.round(cpu.server)} | ${Math.round(cpu.client)} | ${Math.round(cpu.postgres)} | ${Math.round(cpu.idlePercent)}%`;
}

export const CPU_NOTE =
  'CPU µs/request: user + system time from /proc over the run, divided by the requests answered: the serving process, the autocannon client ' +
  '(the bench process) and the bench\'s private PostgreSQL cluster (its postmaster and children only: bench/_pg-cluster.ts); machine idle is from /proc/stat.';
