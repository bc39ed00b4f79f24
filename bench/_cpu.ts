/*
 * CPU time per request of each side of a load run, from /proc: the serving process, the
 * autocannon client (the bench process itself) and every PostgreSQL process, and the share of the
 * machine left idle. On a 2-core machine shared by all three, this says which side bounds a
 * throughput ratio. Used by bench/ipv4.ts and bench/indicators.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';

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
 * utime + stime of one process (all its threads), in clock ticks; 0 once it is gone. With
 * `reaped`, also the time of its children that exited and were waited for (cutime + cstime).
 */
function processTicks(pid: number | 'self', reaped = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]) + (reaped ? Number(fields[13]) + Number(fields[14]) : 0);
  } catch {
    return 0;
  }
}

export function cpuSnapshot(serverPid: number): CpuTicks {
  let postgres = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      // A backend that exits during the run (a pool closing an idle connection) hands its time to
      // the postmaster's reaped-children counters: counting those keeps the sum from going back.
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') postgres += processTicks(Number(pid), true);
    } catch {
      // exited while listed
    }
  }
  const machine = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const idle = machine[3]! + machine[4]!;
  const all = machine.reduce((a, b) => a + b, 0);
  return { server: processTicks(serverPid), client: processTicks('self'), postgres, busy: all - idle, all };
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
  '(the bench process) and every PostgreSQL process; machine idle is from /proc/stat.';
