import { createEngineEnforcer, execChunks, type Enforcer, type EnforcerAdapter, type PluginLogger } from '@rampart/plugin-kit';
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
 * one. A batch goes to the list the drop rules point at, as `remove`/`add` commands, one `exec`
 * per `batchSize`; RouterOS refuses an address already listed, so a list changed behind the
 * engine's back makes the batch fail and the engine replace the list whole.
 */
export function addressListAdapter(o: AddressListOptions): EnforcerAdapter {
  const lists = [`${o.listName}-a`, `${o.listName}-b`] as const;
  const comment = `${o.listName}-drop`;

  async function run(commands: string[], signal: AbortSignal | undefined): Promise<string> {
    let output = '';
    // At most batchSize commands and MAX_EXEC_BYTES per exec: 500 `add` lines are ~40 KB, more
    // than an SSH server must accept in one request.
    for (const chunk of execChunks(commands, o.batchSize)) {
      const out = await o.shell.exec(chunk, signal);
      const failed = routerOsError(out);
      if (failed) throw new RouterOsError(failed);
      output += out;
    }
    return output;
  }

  /** The list the drop rules point at, or undefined when the rules are missing or disagree. */
  async function activeList(signal?: AbortSignal): Promise<string | undefined> {
    const rules = parseDropRules(await run([ros.printRules(comment)], signal));
    const names = new Set(rules.map((r) => r.list));
    const complete = o.chains.every((c) => rules.some((r) => r.chain === c));
    const only = names.size === 1 ? [...names][0] : undefined;
    return complete && only && (lists as readonly string[]).includes(only) ? only : undefined;
  }

  return {
    async read(signal?: AbortSignal) {
      const active = await activeList(signal);
      return active ? parseAddressList(await run([ros.printList(active)], signal)) : [];
    },

    async replaceAll(entries, signal?: AbortSignal) {
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
    },

    async applyBatch(change, _all, signal?: AbortSignal) {
      const active = await activeList(signal);
      if (!active) throw new RouterOsError('the drop rules are missing or point at different lists');
      await run([...change.remove.map((c) => ros.remove(active, c)), ...change.add.map((e) => ros.add(active, e.value))], signal);
    },

    async removeAll(signal?: AbortSignal) {
      await run([ros.removeRules(comment), ...lists.map((l) => ros.clearList(l))], signal);
    },

    async probe(signal?: AbortSignal) {
      await activeList(signal);
    },

    close: () => o.shell.close(),
  };
}

export function createAddressListEnforcer(o: AddressListOptions): Enforcer {
  return createEngineEnforcer(addressListAdapter(o), { capacity: o.capacity, log: o.log });
}
