import { canonicalIpv4Cidr } from '@rampart/contracts';
import {
  EnforcerCommandError,
  createEngineEnforcer,
  runArgv,
  runChecked,
  runShell,
  ipv4Codec,
  sortValues,
  writeFileAtomic,
  type CommandResult,
  type Enforcer,
  type EnforcerAdapter,
  type EnforcerContext,
} from '@rampart/plugin-kit';
import type { IpsetConfig } from './config.ts';
import { diffBatches, fullReplaceScript, parseRuleState, parseSave, saveScript, type IpsetLayout } from './script.ts';

/**
 * iptables + ipset: one `hash:net` set sized for the list (maxelem = capacity), filled by
 * `ipset restore`, replaced by filling a twin and swapping; a DROP rule matching it at the top of
 * INPUT, FORWARD and DOCKER-USER (when that chain exists). A set that a rule is missing for
 * (after a firewall reload or `nft flush ruleset`) enforces nothing and reads as empty, so the
 * engine's reconcile re-asserts it.
 */
export function ipsetAdapter(config: IpsetConfig, ctx: EnforcerContext): EnforcerAdapter {
  const options = config.options;
  const layout: IpsetLayout = { set: options.set, capacity: options.capacity };
  const timeoutMs = options.timeout_seconds * 1000;
  const run = ctx.run ?? runShell;
  const ruleSpec = ['-m', 'set', '--match-set', options.set, 'src', '-m', 'comment', '--comment', 'rampart', '-j', 'DROP'];

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
    if (config.acl) await writeFileAtomic(config.acl, saveScript(layout, sortValues(ipv4Codec, cidrs())), 0o640);
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

  return {
    async read(signal?: AbortSignal) {
      const members = await readSet(signal);
      if (!members) return [];
      // A set no rule matches enforces nothing.
      const rules = await ruleState(signal);
      return rules.every((r) => r.present) ? members : [];
    },

    async replaceAll(entries, signal?: AbortSignal) {
      const cidrs = entries.map((e) => e.value);
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
      await persist(() => cidrs, signal);
    },

    async applyBatch(change, all, signal?: AbortSignal) {
      const added = change.add.map((e) => e.value);
      for (const script of diffBatches(layout, added, change.remove, options.batch_size)) await checked(['ipset', 'restore'], script, signal);
      if (config.acl || config.reload_command) await persist(() => all().map((e) => e.value), signal);
    },

    async removeAll(signal?: AbortSignal) {
      await unwireRules(signal);
      liveExists = null;
      const destroy = await tool(['ipset', 'destroy', options.set], undefined, signal);
      if (destroy.code !== 0 && !/does not exist/.test(destroy.stderr)) throw new EnforcerCommandError(destroy.code, destroy.stderr);
      await persist(() => [], signal);
    },

    // The kernel's set has no order; the acl file is sorted by `persist`.
    unordered: true,

    async probe(signal?: AbortSignal) {
      for (const argv of [['ipset', 'list', '-n'], [options.iptables, '-w', '5', '-S', 'INPUT']]) {
        const r = await tool(argv, undefined, signal);
        if (r.code !== 0) throw new Error(r.stderr.trim().slice(0, 500));
      }
    },
    // ipset and iptables run per call: nothing outlives a method, so there is nothing to release.
  };
}

export function createIpsetEnforcer(config: IpsetConfig, ctx: EnforcerContext): Enforcer {
  return createEngineEnforcer(ipsetAdapter(config, ctx), {
    capacity: config.options.capacity,
    log: ctx.log.child({ enforcer: 'ipset', set: config.options.set }),
  });
}
