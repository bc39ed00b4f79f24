import { canonicalCidr, sortCidrs, type EnforcerAdapter, type InteractOptions } from '@rampart/plugin-kit';
import type { CliShell } from './ios-adapter.ts';

/*
 * Cisco ASA shuns: `shun <ip>` blocks every new connection from a host, `no shun <ip>` lifts it,
 * `show shun` lists them, `clear shun` lifts them all. Shuns are not part of the configuration:
 * a reload or a failover loses them, and the engine's reconcile (which reads `show shun`) puts
 * them back. A shun holds one host, never a network.
 */

/** ASA prints a refused command's reason on a line starting with `ERROR:`. */
export const ASA_ERROR = /^\s*ERROR:/;

const CLI: InteractOptions = { setup: ['terminal pager 0'], errorLine: ASA_ERROR, privileged: true };

/** The placeholder of the operator's command template. */
export const IP_PLACEHOLDER = '{ip}';

/**
 * Shunned hosts of `show shun` as canonical `/32` CIDRs (sorted): ASA prints
 * `shun (outside) 10.1.1.27 0.0.0.0 0 0 0` (interface, source, destination, ports, protocol);
 * older releases `Shun 10.1.1.27 0.0.0.0 0 0`.
 */
export function parseShuns(output: string): string[] {
  const out: string[] = [];
  for (const line of output.split('\n')) {
    const m = /^\s*shun\s+(?:\([^)]*\)\s+)?(\d{1,3}(?:\.\d{1,3}){3})(?:\s|$)/i.exec(line);
    const cidr = m ? canonicalCidr(m[1]!) : undefined;
    if (cidr) out.push(cidr);
  }
  return sortCidrs(out);
}

export interface ShunOptions {
  /** The operator's template, `shun {ip}` by default; the removal is `no ` + the same line. */
  command: string;
  shell: CliShell;
}

/** Only single hosts can be shunned; the engine counts the rest as refused. */
export function shunnable(cidr: string): boolean {
  return cidr.endsWith('/32');
}

export function shunAdapter(o: ShunOptions): EnforcerAdapter {
  const shun = (cidr: string) => o.command.replace(IP_PLACEHOLDER, cidr.slice(0, -3));
  const unshun = (cidr: string) => `no ${shun(cidr)}`;

  async function read(signal?: AbortSignal): Promise<string[]> {
    return parseShuns((await o.shell.interact(['show shun'], CLI, signal))[0]!.output);
  }

  async function run(lines: string[], signal?: AbortSignal): Promise<void> {
    if (lines.length) await o.shell.interact(lines, CLI, signal);
  }

  return {
    read,
    // The shun table is this enforcer's: a replace lifts what is not wanted and shuns what is
    // missing, from what `show shun` says now (a reload emptied it, an operator edited it).
    async replaceAll(entries, signal) {
      const live = new Set(await read(signal));
      const wanted = new Set(entries.map((e) => e.value));
      await run([...[...live].filter((c) => !wanted.has(c)).map(unshun), ...[...wanted].filter((c) => !live.has(c)).map(shun)], signal);
    },
    // ASA refuses a shun that exists and the removal of one that does not: the call fails and
    // the engine replaces from a fresh read.
    async applyBatch(change, _all, signal) {
      await run([...change.remove.map(unshun), ...change.add.map((e) => shun(e.value))], signal);
    },
    async removeAll(signal) {
      await run(['clear shun'], signal);
    },
    async probe(signal) {
      await read(signal);
    },
    close: () => o.shell.close(),
    unordered: true,
  };
}
