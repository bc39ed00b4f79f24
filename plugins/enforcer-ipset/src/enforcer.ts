import {
  canonicalCidr,
  EnforcedSet,
  EnforcerCommandError,
  runArgv,
  runChecked,
  runShell,
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
import { diffBatches, fullReplaceScript, parseSave, saveScript, type IpsetLayout } from './script.ts';

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
  /** What the last successful commit left in the set; null = unknown (re-assert whole). */
  let committed: Set<string> | null = null;
  let seeded = false;

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
    return parseSave(result.stdout, options.set).flatMap((m) => canonicalCidr(m) ?? []);
  }

  /** Chains that exist now (DOCKER-USER only where Docker made it), with whether our rule is there. */
  async function ruleState(): Promise<{ chain: string; present: boolean }[]> {
    const out: { chain: string; present: boolean }[] = [];
    for (const chain of options.chains) {
      const exists = (await iptables(['-S', chain])).code === 0;
      const builtin = chain === 'INPUT' || chain === 'FORWARD';
      if (!exists && !builtin) continue;
      out.push({ chain, present: exists && (await iptables(['-C', chain, ...ruleSpec])).code === 0 });
    }
    return out;
  }

  async function wireRules(): Promise<void> {
    for (const { chain, present } of await ruleState()) {
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

  async function replaceAll(): Promise<void> {
    const cidrs = [...set.enforced];
    const names = (await checked(['ipset', 'list', '-n'])).stdout.split('\n');
    if (names.includes(`${options.set}-new`)) await checked(['ipset', 'destroy', `${options.set}-new`]);
    await checked(['ipset', 'restore'], fullReplaceScript(layout, cidrs, !names.includes(options.set)));
    await wireRules();
    committed = new Set(cidrs);
    await persist(() => cidrs);
    log.info({ entries: cidrs.length }, 'ipset replaced');
  }

  function result(): EnforceResult {
    const invalid = set.desired.invalid;
    if (set.cut > 0) log.warn({ cut: set.cut, capacity: options.capacity }, 'capacity reached; lowest scores cut');
    if (invalid > 0) log.warn({ invalid }, 'inputs that are not IPv4 CIDRs ignored');
    return { enforced: set.enforced.size, cut: set.cut, ...(invalid > 0 ? { invalid } : {}) };
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

    async sync(desired: readonly BlockEntry[]) {
      set.replace(desired);
      seeded = true;
      await replaceAll();
      return result();
    },

    async apply(diff: Diff) {
      await seed();
      const change = set.apply(diff);
      if (!committed) {
        await replaceAll();
        return result();
      }
      const batches = diffBatches(layout, change.added, change.removed, options.batch_size);
      try {
        for (const script of batches) await checked(['ipset', 'restore'], script);
      } catch (err) {
        log.warn({ err, stage: 'apply' }, 'ipset restore failed; replacing the set');
        await replaceAll();
        return result();
      }
      for (const c of change.removed) committed.delete(c);
      for (const c of change.added) committed.add(c);
      if (batches.length > 0 && (config.acl || config.reload_command)) await persist(() => [...committed!]);
      return result();
    },

    async list() {
      const members = await readSet();
      if (!members) return [];
      const rules = await ruleState();
      // A set no rule matches enforces nothing.
      if (!rules.every((r) => r.present)) return [];
      return sortCidrsFast(members);
    },

    async reconcile(): Promise<ReconcileResult> {
      await seed();
      const members = await readSet();
      const rules = await ruleState();
      const drifted =
        !committed || !members || !rules.every((r) => r.present) || members.length !== committed.size || members.some((m) => !committed!.has(m));
      if (drifted) {
        log.warn({ present: Boolean(members), rules }, 'ipset drifted; re-asserting');
        await replaceAll();
      }
      return { ...result(), drifted };
    },

    async withdraw() {
      set.clear();
      seeded = true;
      await unwireRules();
      const destroy = await tool(['ipset', 'destroy', options.set]);
      if (destroy.code !== 0 && !/does not exist/.test(destroy.stderr)) throw new EnforcerCommandError(destroy.code, destroy.stderr);
      committed = null;
      await persist(() => []);
      log.info({}, 'ipset withdrawn');
    },

    // ipset and iptables run per call: nothing outlives a method, so there is nothing to release.
    async close() {},
  };
}
