import {
  DesiredSet,
  sortCidrs,
  sortEntries,
  type BlockEntry,
  type Diff,
  type EnforceResult,
  type Enforcer,
  type PluginLogger,
  type ReconcileResult,
} from '@rampart/plugin-kit';
import { parseAddressList, parseDropRules, routerOsError, ros } from './routeros.ts';

export interface RouterShell {
  /** Runs `command`; an aborted `signal` closes the channel and rejects. */
  exec(command: string, signal?: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

export interface AddressListOptions {
  /** Base name: lists `<name>-a` / `<name>-b`, drop rules commented `<name>-drop`. */
  listName: string;
  chains: string[];
  batchSize: number;
  capacity: number;
  shell: RouterShell;
  log: PluginLogger;
}

export class RouterOsError extends Error {
  readonly code = 'ROUTEROS_COMMAND_FAILED';
  constructor(readonly detail: string) {
    super(`RouterOS refused a command: ${detail.slice(0, 300)}`);
    this.name = 'RouterOsError';
  }
}

/**
 * RouterOS address-list enforcement. Two lists alternate: a full replace fills the idle one,
 * then repoints the drop rules to it in one `set` (the switch is atomic), then empties the old
 * one. A diff is compared with the active list as the router reports it and sent as
 * `add`/`remove` batches, one `exec` per batch.
 */
export function createAddressListEnforcer(o: AddressListOptions): Enforcer {
  const desired = new DesiredSet();
  const lists = [`${o.listName}-a`, `${o.listName}-b`] as const;
  const comment = `${o.listName}-drop`;

  async function run(commands: string[], signal: AbortSignal | undefined): Promise<string> {
    let output = '';
    for (let i = 0; i < commands.length; i += o.batchSize) {
      const out = await o.shell.exec(commands.slice(i, i + o.batchSize).join('\n'), signal);
      const failed = routerOsError(out);
      if (failed) throw new RouterOsError(failed);
      output += out;
    }
    return output;
  }

  /** The list the drop rules point at, or undefined when the rules are missing or disagree. */
  async function activeList(signal?: AbortSignal): Promise<{ list: string | undefined; rules: number }> {
    const rules = parseDropRules(await run([ros.printRules(comment)], signal));
    const names = new Set(rules.map((r) => r.list));
    const complete = o.chains.every((c) => rules.some((r) => r.chain === c));
    const only = names.size === 1 ? [...names][0] : undefined;
    return { list: complete && only && (lists as readonly string[]).includes(only) ? only : undefined, rules: rules.length };
  }

  async function readList(list: string, signal?: AbortSignal): Promise<string[]> {
    return parseAddressList(await run([ros.printList(list)], signal));
  }

  function kept(): { entries: BlockEntry[]; cut: number } {
    const { kept: entries, cut } = desired.withinCapacity(o.capacity);
    return { entries: sortEntries(entries), cut };
  }

  function result(cut: number, enforced: number): EnforceResult {
    if (cut > 0) o.log.warn({ cut, capacity: o.capacity }, 'capacity reached; lowest scores cut');
    if (desired.invalid > 0) o.log.warn({ invalid: desired.invalid }, 'inputs that are not IPv4 CIDRs ignored');
    return { enforced, cut, ...(desired.invalid > 0 ? { invalid: desired.invalid } : {}) };
  }

  async function replace(signal?: AbortSignal): Promise<EnforceResult> {
    const { entries, cut } = kept();
    const rules = parseDropRules(await run([ros.printRules(comment)], signal));
    // Fill a list no drop rule points at, so that nothing enforced is emptied on the way.
    const referenced = new Set(rules.map((r) => r.list));
    const next = lists.find((l) => !referenced.has(l)) ?? lists[0];
    await run([ros.clearList(next), ...entries.map((e) => ros.add(next, e.value))], signal);
    const missing = o.chains.filter((c) => !rules.some((r) => r.chain === c));
    if (missing.length > 0) {
      // New rules go to the top of the chain, unless the chain has no rule at all.
      const first = (Number((await run([ros.countRules()], signal)).trim()) || 0) > 0;
      await run(
        missing.map((c) => ros.addRule(c, next, comment, first)),
        signal,
      );
    }
    // One command repoints every drop rule: traffic meets the old list or the new one.
    await run([ros.repoint(comment, next)], signal);
    await run(
      lists.filter((l) => l !== next).map((l) => ros.clearList(l)),
      signal,
    );
    return result(cut, entries.length);
  }

  async function list(signal?: AbortSignal): Promise<string[]> {
    const { list: active } = await activeList(signal);
    return active ? readList(active, signal) : [];
  }

  return {
    capacity: o.capacity,
    async healthcheck(signal?: AbortSignal) {
      try {
        await activeList(signal);
        return { ok: true };
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
    },
    async sync(entries: BlockEntry[], signal?: AbortSignal) {
      desired.replace(entries);
      return replace(signal);
    },
    async apply(diff: Diff, signal?: AbortSignal) {
      desired.apply(diff);
      const { list: active } = await activeList(signal);
      if (!active) return replace(signal);
      const { entries, cut } = kept();
      const live = new Set(await readList(active, signal));
      const want = new Set(entries.map((e) => e.value));
      await run(
        [
          ...[...live].filter((c) => !want.has(c)).map((c) => ros.remove(active, c)),
          ...entries.filter((e) => !live.has(e.value)).map((e) => ros.add(active, e.value)),
        ],
        signal,
      );
      return result(cut, entries.length);
    },
    list,
    async reconcile(signal?: AbortSignal): Promise<ReconcileResult> {
      const want = kept().entries.map((e) => e.value);
      const live = sortCidrs(await list(signal));
      const drifted = live.length !== want.length || live.some((c, i) => c !== want[i]);
      if (!drifted) return { enforced: want.length, cut: kept().cut, drifted };
      o.log.warn({ live: live.length, expected: want.length }, 'router list drifted; re-asserting');
      desired.invalid = 0;
      return { ...(await replace(signal)), drifted };
    },
    async withdraw(signal?: AbortSignal) {
      desired.replace([]);
      await run([ros.removeRules(comment), ...lists.map((l) => ros.clearList(l))], signal);
    },
    close: () => o.shell.close(),
  };
}
