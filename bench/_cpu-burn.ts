/*
 * A busy host for a benchmark (issue 35 item 7: the agent's memory "on a busy host"): processes
 * of their own that spin on a core each (Node computing hashes in a loop, at normal priority)
 * until stopped, so the measured process gets only the CPU time the scheduler shares out and
 * seldom an idle moment. The load average they make is what the results record.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const SPIN = "const { createHash } = require('node:crypto'); let b = Buffer.alloc(4096); for (;;) b = createHash('sha256').update(b).digest();";

/** Starts `n` spinning processes; `stop()` ends them. */
export function startCpuBurn(n: number): { pids: number[]; stop: () => Promise<void> } {
  const children: ChildProcess[] = Array.from({ length: n }, () => spawn(process.execPath, ['-e', SPIN], { stdio: 'ignore' }));
  return {
    pids: children.map((c) => c.pid!),
    stop: async () => {
      await Promise.all(
        children.map((c) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => c.once('exit', () => resolve()).kill('SIGKILL')))),
      );
    },
  };
}
