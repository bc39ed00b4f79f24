import { writeFileAtomic } from '../atomic-file.ts';
import { EnforcedSet } from '../enforced-set.ts';
import type { BlockEntry, Diff, EnforceResult, Enforcer, EnforcerContext, ReconcileResult } from '../enforcer.ts';
import { sortCidrsFast } from '../ipv4-range.ts';
import { serializer } from '../serial.ts';
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

/**
 * An enforcer that owns one nftables table (`inet` for the host, `bridge` for a bridge): full
 * replace = one `nft -f` transaction that deletes and re-creates the table; a diff = element
 * transactions of `batchSize`. The model (what was asked, with scores) is the truth: when a
 * transaction fails because someone flushed the ruleset, or `reconcile` finds the table changed,
 * the model is re-asserted whole. Used by enforcer-nftables and enforcer-nftables-bridge.
 */
export function createNftSetEnforcer(options: NftSetEnforcerOptions, ctx: EnforcerContext): Enforcer {
  const layout: NftLayout = options;
  const nft = nftRunner(options.netns, options.timeoutSeconds * 1000);
  const log = ctx.log.child({ enforcer: options.name, table: `${options.family} ${options.table}` });
  const run = ctx.run ?? runShell;
  const set = new EnforcedSet(options.capacity);
  /** Networks enforced (before removing the covered ones). */
  let nets = new Set<string>();
  /**
   * The outermost networks the last successful transaction left in the kernel, or null when the
   * kernel may differ from the model (never committed, withdrawn, a transaction failed): the next
   * change then re-asserts the whole table. While not null, the addresses set equals the model's.
   */
  let committedNets: Set<string> | null = null;
  let seeded = false;
  let loggedCut = 0;
  const serial = serializer();

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
    if (options.reloadCommand) await runChecked(run, options.reloadCommand, options.timeoutSeconds * 1000, signal);
  }

  function result(): EnforceResult {
    const invalid = set.desired.invalid;
    // Logged when the cut changes, not on every diff while the set stays full.
    if (set.cut !== loggedCut && set.cut > 0) log.warn({ cut: set.cut, capacity: options.capacity }, 'capacity reached; lowest scores cut');
    loggedCut = set.cut;
    if (invalid > 0) log.warn({ invalid }, 'inputs that are not IPv4 CIDRs ignored');
    return { enforced: set.size, cut: set.cut, ...(invalid > 0 ? { invalid } : {}) };
  }

  function trackNets(change: { added: string[]; removed: string[] }): void {
    for (const cidr of change.removed) nets.delete(cidr);
    for (const cidr of change.added) if (!cidr.endsWith('/32')) nets.add(cidr);
  }

  function resetNets(): void {
    nets = new Set();
    for (const cidr of set.cidrs()) if (!cidr.endsWith('/32')) nets.add(cidr);
  }

  function modelAddrs(): string[] {
    const addrs: string[] = [];
    for (const cidr of set.cidrs()) if (cidr.endsWith('/32')) addrs.push(cidr);
    return addrs;
  }

  async function replaceAll(signal?: AbortSignal): Promise<void> {
    const addrs = modelAddrs();
    const outer = outermostNets(nets);
    const script = fullReplaceScript(layout, addrs, outer);
    committedNets = null;
    await execute(script, signal);
    committedNets = new Set(outer);
    await persist(script, signal);
    log.info({ addrs: addrs.length, nets: outer.length }, 'nft table replaced');
  }

  /** A process restarted without a sync still owns what its table holds; scores unknown (0). */
  async function seed(signal?: AbortSignal): Promise<void> {
    if (seeded) return;
    const state = await readTable(signal);
    const existing = state ? [...state.addrs, ...state.nets].map((cidr) => ({ value: cidr, score: 0 })) : [];
    set.replace(existing);
    resetNets();
    seeded = true;
  }

  async function applyIncrementally(change: { added: string[]; removed: string[] }, signal?: AbortSignal): Promise<void> {
    const before = committedNets;
    if (!before) return replaceAll(signal);
    const outer = outermostNets(nets);
    const outerSet = new Set(outer);
    const batches = elementBatches(
      layout,
      {
        addAddrs: change.added.filter((c) => c.endsWith('/32')),
        delAddrs: change.removed.filter((c) => c.endsWith('/32')),
        addNets: outer.filter((c) => !before.has(c)),
        delNets: [...before].filter((c) => !outerSet.has(c)),
      },
      options.batchSize,
    );
    if (batches.length === 0) return;
    committedNets = null;
    try {
      for (const script of batches) await execute(script, signal);
    } catch (err) {
      // Cancelled: the kernel holds some batches; `committedNets` stays null, so the next call replaces.
      if (signal?.aborted) throw err;
      // Someone flushed or changed the table under us: the model is the truth, re-assert it.
      log.warn({ err, stage: 'apply' }, 'element transaction failed; replacing the table');
      return replaceAll(signal);
    }
    committedNets = outerSet;
    if (options.acl || options.reloadCommand) await persist(fullReplaceScript(layout, modelAddrs(), outer), signal);
  }

  return {
    capacity: options.capacity,

    async healthcheck(signal?: AbortSignal) {
      const check = await nft(['-c', '-f', '-'], `table ${options.family} ${options.table} {}\n`, signal);
      return check.code === 0 ? { ok: true } : { ok: false, detail: check.stderr.trim().slice(0, 500) };
    },

    sync: (desired: readonly BlockEntry[], signal?: AbortSignal) =>
      serial(async () => {
        set.replace(desired);
        resetNets();
        seeded = true;
        await replaceAll(signal);
        return result();
      }, signal),

    apply: (diff: Diff, signal?: AbortSignal) =>
      serial(async () => {
        await seed(signal);
        const change = set.apply(diff);
        trackNets(change);
        await applyIncrementally(change, signal);
        return result();
      }, signal),

    async list(signal?: AbortSignal) {
      const state = await readTable(signal);
      if (!state || !state.wired) return [];
      return sortCidrsFast([...state.addrs, ...state.nets]);
    },

    reconcile: (signal?: AbortSignal): Promise<ReconcileResult> =>
      serial(async () => {
        await seed(signal);
        const state = await readTable(signal);
        const committed = committedNets;
        const drifted =
          !committed ||
          !state ||
          !state.wired ||
          state.nets.length !== committed.size ||
          !state.nets.every((c) => committed.has(c)) ||
          state.addrs.length !== modelAddrs().length ||
          !state.addrs.every((c) => set.has(c));
        if (drifted) {
          log.warn({ present: Boolean(state), wired: state?.wired ?? false }, 'nft table drifted; re-asserting');
          await replaceAll(signal);
        }
        return { ...result(), drifted };
      }, signal),

    withdraw: (signal?: AbortSignal) =>
      serial(async () => {
        set.clear();
        nets = new Set();
        seeded = true;
        committedNets = null;
        const script = withdrawScript(layout);
        await execute(script, signal);
        await persist(script, signal);
        log.info({}, 'nft table withdrawn');
      }, signal),

    // nft is run per call: no connection or process outlives a method, so there is nothing to release.
    async close() {},
  };
}
