/*
 * CPU time of a process from /proc, for the benches that time each side of a run in a process of
 * its own (bench/_pinned.ts: the serving processes; bench/_nginx.ts: nginx's master and workers;
 * bench/_pg-cluster.ts: the bench's own PostgreSQL cluster, never another one on the machine).
 */
import { readFileSync } from 'node:fs';

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
