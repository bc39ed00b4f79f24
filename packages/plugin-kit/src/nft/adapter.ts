import { writeFileAtomic } from '../atomic-file.ts';
import type { Enforcer, EnforcerContext } from '../enforcer.ts';
import { createEngineEnforcer, type EnforcerAdapter } from '../engine/index.ts';
import { EnforcerCommandError, runChecked, runShell } from '../shell.ts';
import { isMissing, nftRunner } from './run.ts';
import { parseTable, type TableState } from './read-back.ts';
import { elementBatches, fullReplaceScript, outermostNets, withdrawScript, type NftLayout } from './script.ts';

export interface NftSetEnforcerOptions extends NftLayout {
  /** File the full-replace script is written to after each change; '' = none. */
  acl: string;
  /** Shell command run after each change; '' = none. */
  reloadCommand: string;
  batchSize: number;
  /** Named network namespace to run nft in; '' = the agent's own. */
  netns: string;
  timeoutSeconds: number;
  /** Plugin name for log lines. */
  name: string;
}

const isAddr = (cidr: string) => cidr.endsWith('/32');

/**
 * One nftables table (`inet` for the host, `bridge` for a bridge): single addresses in a hash
 * set, networks in an interval set (only the outermost of nested ones: nft refuses overlaps),
 * drop rules on each hook. A full replace is one `nft -f` transaction that deletes and
 * re-creates the table; a batch is element transactions of `batchSize`.
 */
export function nftSetAdapter(options: NftSetEnforcerOptions, ctx: EnforcerContext): EnforcerAdapter {
  const layout: NftLayout = options;
  const nft = nftRunner(options.netns, options.timeoutSeconds * 1000);
  /** Networks of the enforced set (nested ones included), as of the last write. */
  let nets = new Set<string>();
  /** The outermost networks in the kernel after the last successful write. */
  let committedNets = new Set<string>();

  async function readTable(signal?: AbortSignal): Promise<TableState | null> {
    const result = await nft(['-j', 'list', 'table', options.family, options.table], undefined, signal);
    if (isMissing(result)) return null;
    if (result.code !== 0) throw new EnforcerCommandError(result.code, result.stderr);
    return parseTable(result.stdout, options.priority, options.hooks);
  }

  async function execute(script: string, signal?: AbortSignal): Promise<void> {
    const result = await nft(['-f', '-'], script, signal);
    if (result.code !== 0) throw new EnforcerCommandError(result.code, result.stderr);
  }

  /** Persists the current script for firewall reloads, then runs the operator's command. */
  async function persist(script: string, signal?: AbortSignal): Promise<void> {
    if (options.acl) await writeFileAtomic(options.acl, script, 0o640);
    if (options.reloadCommand) await runChecked(ctx.run ? (command, opts) => ctx.run!(command, opts) : runShell, options.reloadCommand, options.timeoutSeconds * 1000, signal);
  }

  const addrsOf = (values: Iterable<string>) => [...values].filter(isAddr);

  return {
    async read(signal?: AbortSignal) {
      const state = await readTable(signal);
      return state?.wired ? [...state.addrs, ...state.nets] : [];
    },

    async replaceAll(entries, signal?: AbortSignal) {
      const values = entries.map((e) => e.value);
      nets = new Set(values.filter((v) => !isAddr(v)));
      const outer = outermostNets(nets);
      const script = fullReplaceScript(layout, addrsOf(values), outer);
      await execute(script, signal);
      committedNets = new Set(outer);
      await persist(script, signal);
    },

    async applyBatch(change, all, signal?: AbortSignal) {
      for (const cidr of change.remove) nets.delete(cidr);
      for (const { value } of change.add) if (!isAddr(value)) nets.add(value);
      const outer = outermostNets(nets);
      const outerSet = new Set(outer);
      const before = committedNets;
      const batches = elementBatches(
        layout,
        {
          addAddrs: addrsOf(change.add.map((e) => e.value)),
          delAddrs: addrsOf(change.remove),
          addNets: outer.filter((c) => !before.has(c)),
          delNets: [...before].filter((c) => !outerSet.has(c)),
        },
        options.batchSize,
      );
      for (const script of batches) await execute(script, signal);
      committedNets = outerSet;
      if (options.acl || options.reloadCommand) {
        await persist(fullReplaceScript(layout, addrsOf(all().map((e) => e.value)), outer), signal);
      }
    },

    async removeAll(signal?: AbortSignal) {
      nets = new Set();
      committedNets = new Set();
      const script = withdrawScript(layout);
      await execute(script, signal);
      await persist(script, signal);
    },

    async probe(signal?: AbortSignal) {
      const check = await nft(['-c', '-f', '-'], `table ${options.family} ${options.table} {}\n`, signal);
      if (check.code !== 0) throw new Error(check.stderr.trim().slice(0, 500));
    },

    unordered: true,

    expected: (enforced) => {
      const values = enforced.map((e) => e.value);
      return [...addrsOf(values), ...outermostNets(values.filter((v) => !isAddr(v)))];
    },

    // nft is run per call: no connection or process outlives a method, so there is nothing to release.
  };
}

/** The nftables enforcer (enforcer-nftables, enforcer-nftables-bridge): `nftSetAdapter` under the engine. */
export function createNftSetEnforcer(options: NftSetEnforcerOptions, ctx: EnforcerContext): Enforcer {
  return createEngineEnforcer(nftSetAdapter(options, ctx), {
    capacity: options.capacity,
    log: ctx.log.child({ enforcer: options.name, table: `${options.family} ${options.table}` }),
  });
}
