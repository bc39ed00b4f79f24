import { createEngineEnforcer, type BlockEntry, type Enforcer, type EnforcerAdapter, type PluginLogger } from '@rampart/plugin-kit';
import { cmd, failureOf, hostOf, inEachContext, listSections, script, type CommandBase, type Context } from './script.ts';

export interface GatewayShell {
  /** Runs `command` (a bash script); an aborted `signal` closes the channel and rejects. */
  exec(command: string, signal?: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

export interface Member {
  /** The `connections` entry, for errors and logs. */
  name: string;
  shell: GatewayShell;
}

export interface DenyListOptions {
  /** Cluster members: every one gets the same list. */
  members: Member[];
  /** VSX virtual systems; empty for a gateway that is not VSX. */
  vsids: string[];
  command: CommandBase;
  /** `load_file`: the list goes to a temp file, then `-F` and `-l <file>`; `flush_and_add`: `-F` then `-a` per entry. */
  fullReplace: 'load_file' | 'flush_and_add';
  tempDir: string;
  /** Command lines per SSH exec (spread over the VSs it runs in); list file lines: 4 × this. */
  batchSize: number;
  capacity: number;
  log: PluginLogger;
}

export class SecureXlError extends Error {
  readonly code = 'SECUREXL_COMMAND_FAILED';
  constructor(
    readonly member: string,
    readonly detail: string,
  ) {
    super(`gateway ${member}: ${detail.slice(0, 300)}`);
    this.name = 'SecureXlError';
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Runs `step` on every member at once; all are tried, the first failure (in member order) is thrown. */
async function onEveryMember<T>(members: readonly Member[], step: (m: Member) => Promise<T>): Promise<T[]> {
  const settled = await Promise.allSettled(members.map(step));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/**
 * The SecureXL deny list of every cluster member and, on VSX, of every listed virtual system.
 *
 * The list holds single IPv4 addresses (the reference's `-a <IPv4 Address>`): networks are
 * refused by the engine (`accepts`), counted as invalid and logged, never enforced.
 *
 * Drift on any one member or VS must reach the engine, which compares `read()` with `expected()`:
 * `read()` returns every list concatenated (an address once per member × VS holding it) and
 * `expected()` the enforced set once per member × VS. A member that rebooted (its list is lost)
 * reads short, the reconcile replaces every list, and the member holds the list again.
 */
export function denyListAdapter(o: DenyListOptions): EnforcerAdapter {
  const contexts: Context[] = o.vsids.length > 0 ? o.vsids : [undefined];
  const vsx = o.vsids.length > 0;
  const file = `${o.tempDir.replace(/\/+$/, '')}/rampart-securexl-deny.txt`;
  const copies = o.members.length * contexts.length;
  // Each command is repeated in every VS of an exec: `batchSize` counts the lines sent.
  const perExec = Math.max(1, Math.floor(o.batchSize / contexts.length));

  async function run(member: Member, body: string[], signal?: AbortSignal): Promise<string> {
    const output = await member.shell.exec(script(vsx, body), signal);
    const failed = failureOf(output);
    if (failed) throw new SecureXlError(member.name, failed);
    return output;
  }

  async function readMember(member: Member, signal?: AbortSignal): Promise<string[]> {
    const sections = listSections(await run(member, inEachContext(contexts, (vs) => cmd.show(o.command, vs)), signal));
    return contexts.flatMap((vs) => {
      const list = sections.get(vs ?? '-');
      if (!list) throw new SecureXlError(member.name, `no deny list was printed for ${vs === undefined ? 'the gateway' : `VS ${vs}`}`);
      return list;
    });
  }

  /** Writes the list to the member's temp file (several execs for a long list), then swaps it in. */
  async function loadFile(member: Member, entries: readonly BlockEntry[], signal?: AbortSignal): Promise<void> {
    const hosts = entries.map((e) => hostOf(e.value));
    const parts = chunks(hosts, o.batchSize * 4);
    for (const [i, part] of parts.entries()) await run(member, cmd.writeFile(file, part, i > 0), signal);
    await run(
      member,
      [
        ...inEachContext(contexts, () => [cmd.flush(o.command), ...(hosts.length > 0 ? [cmd.load(o.command, file)] : [])]),
        ...(hosts.length > 0 ? [cmd.removeFile(file)] : []),
      ],
      signal,
    );
  }

  async function flushAndAdd(member: Member, entries: readonly BlockEntry[], signal?: AbortSignal): Promise<void> {
    const batches = chunks(entries, perExec);
    if (batches.length === 0) batches.push([]);
    for (const [i, batch] of batches.entries()) {
      await run(member, inEachContext(contexts, () => [...(i === 0 ? [cmd.flush(o.command)] : []), ...batch.map((e) => cmd.add(o.command, e.value))]), signal);
    }
  }

  return {
    // A deny list is a set: no order to keep.
    unordered: true,

    async read(signal?: AbortSignal) {
      return (await onEveryMember(o.members, (m) => readMember(m, signal))).flat();
    },

    expected(enforced) {
      return enforced.flatMap((e) => Array<string>(copies).fill(e.value));
    },

    async replaceAll(entries, signal?: AbortSignal) {
      await onEveryMember(o.members, (m) => (o.fullReplace === 'load_file' ? loadFile(m, entries, signal) : flushAndAdd(m, entries, signal)));
    },

    async applyBatch(change, _all, signal?: AbortSignal) {
      const lines = [...change.remove.map((c) => cmd.remove(o.command, c)), ...change.add.map((e) => cmd.add(o.command, e.value))];
      await onEveryMember(o.members, async (m) => {
        for (const batch of chunks(lines, perExec)) await run(m, inEachContext(contexts, () => batch), signal);
      });
    },

    async removeAll(signal?: AbortSignal) {
      // The list file is gone already unless a load failed half-way.
      await onEveryMember(o.members, (m) => run(m, [...inEachContext(contexts, () => [cmd.flush(o.command)]), cmd.removeFile(file)], signal));
    },

    async probe(signal?: AbortSignal) {
      await onEveryMember(o.members, (m) => readMember(m, signal));
    },

    async close() {
      await Promise.all(o.members.map((m) => m.shell.close()));
    },
  };
}

export function createDenyListEnforcer(o: DenyListOptions): Enforcer {
  return createEngineEnforcer(denyListAdapter(o), {
    capacity: o.capacity,
    log: o.log,
    // The deny list takes single addresses; a network is refused and counted, never enforced.
    accepts: (cidr) => cidr.endsWith('/32'),
  });
}
