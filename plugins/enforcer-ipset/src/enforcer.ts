import { canonicalIpv4Cidr } from '@rampart/contracts';
import {
  EnforcedSet,
  EnforcerCommandError,
  runArgv,
  runChecked,
  runShell,
  serializer,
  sortCidrsFast,
  writeFileAtomic,
  type BlockEntry,
  type CommandResult,
  type Diff,
  type EnforceResult,
  type Enforcer,
  type EnforcerContext,
  type ReconcileResult,
} from '@rampart/plugin-kit';
import type { IpsetConfig } from './config.ts';
import { diffBatches, fullReplaceScript, parseRuleState, parseSave, saveScript, type IpsetLayout } from './script.ts';

/**
 * iptables + ipset: one `hash:net` set sized for the list (maxelem = capacity), filled by
 * `ipset restore`, replaced by filling a twin and swapping; a DROP rule matching it at the top of
 * INPUT, FORWARD and DOCKER-USER (when that chain exists). The model is the truth: a failed diff
 * or a drift found by `reconcile` (set gone, rule gone after a firewall reload or `nft flush
 * ruleset`) re-asserts everything.
 */
export function createIpsetEnforcer(config: IpsetConfig, ctx: EnforcerContext): Enforcer {
  const options = config.options;
  const layout: IpsetLayout = { set: options.set, capacity: options.capacity };
  const timeoutMs = options.timeout_seconds * 1000;
  const log = ctx.log.child({ enforcer: 'ipset', set: options.set });
  const run = ctx.run ?? runShell;
  const set = new EnforcedSet(options.capacity);
  const ruleSpec = ['-m', 'set', '--match-set', options.set, 'src', '-m', 'comment', '--comment', 'rampart', '-j', 'DROP'];
  /**
   * True while the kernel's set equals the model (the last commit succeeded); false before the
   * first commit, after a withdraw or a failure: the next change then re-asserts everything.
   */
  let inSync = false;
  let seeded = false;
  let loggedCut = 0;
  const serial = serializer();

  const tool = (argv: readonly string[], input: string | undefined, signal: AbortSignal | undefined): Promise<CommandResult> =>
    runArgv(options.netns ? ['ip', 'netns', 'exec', options.netns, ...argv] : argv, { input, timeoutMs, ...(signal ? { signal } : {}) });
  const iptables = (args: readonly string[], signal: AbortSignal | undefined) => tool([options.iptables, '-w', '5', ...args], undefined, signal);

  async function checked(argv: readonly string[], input: string | undefined, signal: AbortSignal | undefined): Promise<CommandResult> {
    const result = await tool(argv, input, signal);
    if (result.code !== 0) throw new EnforcerCommandError(result.code, result.stderr);
    return result;
  }

  /** Members of the live set, or null when it does not exist. */
  async function readSet(signal?: AbortSignal): Promise<string[] | null> {
    const result = await tool(['ipset', 'save', options.set], undefined, signal);
    if (result.code !== 0) {
      if (/does not exist/.test(result.stderr)) return null;
      throw new EnforcerCommandError(result.code, result.stderr);
    }
    return parseSave(result.stdout, options.set).flatMap((m) => canonicalIpv4Cidr(m) ?? []);
  }

  /**
   * Chains that exist now (DOCKER-USER only where Docker made it), with whether our rule is in
   * them: one `iptables-save -t filter` instead of a `-C` per chain.
   */
  async function ruleState(signal?: AbortSignal): Promise<{ chain: string; present: boolean }[]> {
    const saved = await tool([`${options.iptables}-save`, '-t', 'filter'], undefined, signal);
    if (saved.code !== 0) throw new EnforcerCommandError(saved.code, saved.stderr);
    return parseRuleState(saved.stdout, options.chains, ruleSpec.join(' '));
  }

  /** Inserts the rule where `rules` (a `ruleState()` read) says it is missing. */
  async function wireRules(rules: { chain: string; present: boolean }[], signal?: AbortSignal): Promise<void> {
    for (const { chain, present } of rules) {
      if (present) continue;
      const result = await iptables(['-I', chain, '1', ...ruleSpec], signal);
      if (result.code !== 0) throw new EnforcerCommandError(result.code, result.stderr);
    }
  }

  async function unwireRules(signal?: AbortSignal): Promise<void> {
    for (const chain of options.chains) {
      // -D removes one copy per call; stop when none is left (or the chain does not exist).
      for (let i = 0; i < 16 && (await iptables(['-D', chain, ...ruleSpec], signal)).code === 0; i += 1);
    }
  }

  async function persist(cidrs: () => string[], signal?: AbortSignal): Promise<void> {
    // Sorted so that the file diffs cleanly between versions.
    if (config.acl) await writeFileAtomic(config.acl, saveScript(layout, sortCidrsFast(cidrs())), 0o640);
    if (config.reload_command) await runChecked(run, config.reload_command, timeoutMs, signal);
  }

  /** Whether `<set>` exists, as last seen; null = ask `ipset list -n` before the next replace. */
  let liveExists: boolean | null = null;

  async function restoreAll(cidrs: readonly string[], signal?: AbortSignal): Promise<void> {
    if (liveExists === null) {
      const names = (await checked(['ipset', 'list', '-n'], undefined, signal)).stdout.split('\n');
      // A twin left by a crash between fill and swap would make `create <set>-new` fail.
      if (names.includes(`${options.set}-new`)) await checked(['ipset', 'destroy', `${options.set}-new`], undefined, signal);
      liveExists = names.includes(options.set);
    }
    await checked(['ipset', 'restore'], fullReplaceScript(layout, cidrs, !liveExists), signal);
    liveExists = true;
  }

  async function replaceAll(signal?: AbortSignal): Promise<void> {
    const cidrs = [...set.cidrs()];
    inSync = false;
    const restore = async () => {
      try {
        await restoreAll(cidrs, signal);
      } catch (err) {
        // Someone destroyed the set (or left a twin) since we last looked: look again, once.
        if (liveExists === null || signal?.aborted) throw err;
        liveExists = null;
        await restoreAll(cidrs, signal);
      }
    };
    // Reading the rules does not depend on the set's content: overlap it with the load.
    // allSettled: neither may still run when this call returns and the next one starts.
    const [loaded, rules] = await Promise.allSettled([restore(), ruleState(signal)]);
    if (loaded.status === 'rejected') throw loaded.reason;
    if (rules.status === 'rejected') throw rules.reason;
    await wireRules(rules.value, signal);
    inSync = true;
    await persist(() => cidrs, signal);
    log.info({ entries: cidrs.length }, 'ipset replaced');
  }

  function result(): EnforceResult {
    const invalid = set.desired.invalid;
    // Logged when the cut changes, not on every diff while the set stays full.
    if (set.cut !== loggedCut && set.cut > 0) log.warn({ cut: set.cut, capacity: options.capacity }, 'capacity reached; lowest scores cut');
    loggedCut = set.cut;
    if (invalid > 0) log.warn({ invalid }, 'inputs that are not IPv4 CIDRs ignored');
    return { enforced: set.size, cut: set.cut, ...(invalid > 0 ? { invalid } : {}) };
  }

  async function seed(signal?: AbortSignal): Promise<void> {
    if (seeded) return;
    const live = (await readSet(signal)) ?? [];
    set.replace(live.map((cidr) => ({ value: cidr, score: 0 })));
    seeded = true;
  }

  return {
    capacity: options.capacity,

    async healthcheck(signal?: AbortSignal) {
      for (const argv of [['ipset', 'list', '-n'], [options.iptables, '-w', '5', '-S', 'INPUT']]) {
        const r = await tool(argv, undefined, signal);
        if (r.code !== 0) return { ok: false, detail: r.stderr.trim().slice(0, 500) };
      }
      return { ok: true };
    },

    sync: (desired: readonly BlockEntry[], signal?: AbortSignal) =>
      serial(async () => {
        set.replace(desired);
        seeded = true;
        await replaceAll(signal);
        return result();
      }, signal),

    apply: (diff: Diff, signal?: AbortSignal) =>
      serial(async () => {
        await seed(signal);
        const change = set.apply(diff);
        if (!inSync) {
          await replaceAll(signal);
          return result();
        }
        const batches = diffBatches(layout, change.added, change.removed, options.batch_size);
        inSync = false;
        try {
          for (const script of batches) await checked(['ipset', 'restore'], script, signal);
        } catch (err) {
          // Cancelled: `inSync` stays false, so the next call replaces the set whole.
          if (signal?.aborted) throw err;
          log.warn({ err, stage: 'apply' }, 'ipset restore failed; replacing the set');
          await replaceAll(signal);
          return result();
        }
        inSync = true;
        if (batches.length > 0 && (config.acl || config.reload_command)) await persist(() => [...set.cidrs()], signal);
        return result();
      }, signal),

    async list(signal?: AbortSignal) {
      const members = await readSet(signal);
      if (!members) return [];
      const rules = await ruleState(signal);
      // A set no rule matches enforces nothing.
      if (!rules.every((r) => r.present)) return [];
      return sortCidrsFast(members);
    },

    reconcile: (signal?: AbortSignal): Promise<ReconcileResult> =>
      serial(async () => {
        await seed(signal);
        const members = await readSet(signal);
        const rules = await ruleState(signal);
        const drifted = !inSync || !members || !rules.every((r) => r.present) || members.length !== set.size || members.some((m) => !set.has(m));
        if (drifted) {
          log.warn({ present: Boolean(members), rules }, 'ipset drifted; re-asserting');
          await replaceAll(signal);
        }
        return { ...result(), drifted };
      }, signal),

    withdraw: (signal?: AbortSignal) =>
      serial(async () => {
        set.clear();
        seeded = true;
        inSync = false;
        await unwireRules(signal);
        liveExists = null;
        const destroy = await tool(['ipset', 'destroy', options.set], undefined, signal);
        if (destroy.code !== 0 && !/does not exist/.test(destroy.stderr)) throw new EnforcerCommandError(destroy.code, destroy.stderr);
        await persist(() => [], signal);
        log.info({}, 'ipset withdrawn');
      }, signal),

    // ipset and iptables run per call: nothing outlives a method, so there is nothing to release.
    async close() {},
  };
}
