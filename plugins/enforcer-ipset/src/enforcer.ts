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

  const tool = (argv: readonly string[], input?: string): Promise<CommandResult> =>
    runArgv(options.netns ? ['ip', 'netns', 'exec', options.netns, ...argv] : argv, { input, timeoutMs });
  const iptables = (args: readonly string[]) => tool([options.iptables, '-w', '5', ...args]);

  async function checked(argv: readonly string[], input?: string): Promise<CommandResult> {
    const result = await tool(argv, input);
    if (result.code !== 0) throw new EnforcerCommandError(result.code, result.stderr);
    return result;
  }

  /** Members of the live set, or null when it does not exist. */
  async function readSet(): Promise<string[] | null> {
    const result = await tool(['ipset', 'save', options.set]);
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
  async function ruleState(): Promise<{ chain: string; present: boolean }[]> {
    const saved = await tool([`${options.iptables}-save`, '-t', 'filter']);
    if (saved.code !== 0) throw new EnforcerCommandError(saved.code, saved.stderr);
    return parseRuleState(saved.stdout, options.chains, ruleSpec.join(' '));
  }

  /** Inserts the rule where `rules` (a `ruleState()` read) says it is missing. */
  async function wireRules(rules: { chain: string; present: boolean }[]): Promise<void> {
    for (const { chain, present } of rules) {
      if (present) continue;
      const result = await iptables(['-I', chain, '1', ...ruleSpec]);
      if (result.code !== 0) throw new EnforcerCommandError(result.code, result.stderr);
    }
  }

  async function unwireRules(): Promise<void> {
    for (const chain of options.chains) {
      // -D removes one copy per call; stop when none is left (or the chain does not exist).
      for (let i = 0; i < 16 && (await iptables(['-D', chain, ...ruleSpec])).code === 0; i += 1);
    }
  }

  async function persist(cidrs: () => string[]): Promise<void> {
    // Sorted so that the file diffs cleanly between versions.
    if (config.acl) await writeFileAtomic(config.acl, saveScript(layout, sortCidrsFast(cidrs())), 0o640);
    if (config.reload_command) await runChecked(run, config.reload_command, timeoutMs);
  }

  /** Whether `<set>` exists, as last seen; null = ask `ipset list -n` before the next replace. */
  let liveExists: boolean | null = null;

  async function restoreAll(cidrs: readonly string[]): Promise<void> {
    if (liveExists === null) {
      const names = (await checked(['ipset', 'list', '-n'])).stdout.split('\n');
      // A twin left by a crash between fill and swap would make `create <set>-new` fail.
      if (names.includes(`${options.set}-new`)) await checked(['ipset', 'destroy', `${options.set}-new`]);
      liveExists = names.includes(options.set);
    }
    await checked(['ipset', 'restore'], fullReplaceScript(layout, cidrs, !liveExists));
    liveExists = true;
  }

  async function replaceAll(): Promise<void> {
    const cidrs = [...set.cidrs()];
    inSync = false;
    const restore = async () => {
      try {
        await restoreAll(cidrs);
      } catch (err) {
        // Someone destroyed the set (or left a twin) since we last looked: look again, once.
        if (liveExists === null) throw err;
        liveExists = null;
        await restoreAll(cidrs);
      }
    };
    // Reading the rules does not depend on the set's content: overlap it with the load.
    // allSettled: neither may still run when this call returns and the next one starts.
    const [loaded, rules] = await Promise.allSettled([restore(), ruleState()]);
    if (loaded.status === 'rejected') throw loaded.reason;
    if (rules.status === 'rejected') throw rules.reason;
    await wireRules(rules.value);
    inSync = true;
    await persist(() => cidrs);
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

  async function seed(): Promise<void> {
    if (seeded) return;
    const live = (await readSet()) ?? [];
    set.replace(live.map((cidr) => ({ cidr, score: 0 })));
    seeded = true;
  }

  return {
    capacity: options.capacity,

    async healthcheck() {
      for (const argv of [['ipset', 'list', '-n'], [options.iptables, '-w', '5', '-S', 'INPUT']]) {
        const r = await tool(argv);
        if (r.code !== 0) return { ok: false, detail: r.stderr.trim().slice(0, 500) };
      }
      return { ok: true };
    },

    sync: (desired: readonly BlockEntry[]) =>
      serial(async () => {
        set.replace(desired);
        seeded = true;
        await replaceAll();
        return result();
      }),

    apply: (diff: Diff) =>
      serial(async () => {
        await seed();
        const change = set.apply(diff);
        if (!inSync) {
          await replaceAll();
          return result();
        }
        const batches = diffBatches(layout, change.added, change.removed, options.batch_size);
        inSync = false;
        try {
          for (const script of batches) await checked(['ipset', 'restore'], script);
        } catch (err) {
          log.warn({ err, stage: 'apply' }, 'ipset restore failed; replacing the set');
          await replaceAll();
          return result();
        }
        inSync = true;
        if (batches.length > 0 && (config.acl || config.reload_command)) await persist(() => [...set.cidrs()]);
        return result();
      }),

    async list() {
      const members = await readSet();
      if (!members) return [];
      const rules = await ruleState();
      // A set no rule matches enforces nothing.
      if (!rules.every((r) => r.present)) return [];
      return sortCidrsFast(members);
    },

    reconcile: (): Promise<ReconcileResult> =>
      serial(async () => {
        await seed();
        const members = await readSet();
        const rules = await ruleState();
        const drifted = !inSync || !members || !rules.every((r) => r.present) || members.length !== set.size || members.some((m) => !set.has(m));
        if (drifted) {
          log.warn({ present: Boolean(members), rules }, 'ipset drifted; re-asserting');
          await replaceAll();
        }
        return { ...result(), drifted };
      }),

    withdraw: () =>
      serial(async () => {
        set.clear();
        seeded = true;
        inSync = false;
        await unwireRules();
        liveExists = null;
        const destroy = await tool(['ipset', 'destroy', options.set]);
        if (destroy.code !== 0 && !/does not exist/.test(destroy.stderr)) throw new EnforcerCommandError(destroy.code, destroy.stderr);
        await persist(() => []);
        log.info({}, 'ipset withdrawn');
      }),

    // ipset and iptables run per call: nothing outlives a method, so there is nothing to release.
    async close() {},
  };
}
