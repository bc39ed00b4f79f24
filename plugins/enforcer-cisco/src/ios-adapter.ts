import type { BlockEntry, CliAnswer, EnforcerAdapter, InteractOptions } from '@rampart/plugin-kit';
import {
  IOS_ERROR,
  groupDenies,
  groupExists,
  groupMember,
  parseAccessList,
  parseObjectGroup,
  standardDenies,
  standardSource,
} from './ios-cli.ts';

/** An interactive CLI session (SshSession.interact, or a test double). */
export interface CliShell {
  interact(lines: readonly string[], o?: InteractOptions, signal?: AbortSignal): Promise<CliAnswer[]>;
  close(): Promise<void>;
}

export class IosError extends Error {
  readonly code = 'IOS_COMMAND_FAILED';
  constructor(message: string) {
    super(message);
    this.name = 'IosError';
  }
}

const CLI: InteractOptions = { setup: ['terminal length 0'], errorLine: IOS_ERROR, privileged: true };

/** The highest sequence number IOS takes: the standard ACL's final `permit any` sits there. */
export const LAST_SEQUENCE = 2147483647;

export interface ObjectGroupOptions {
  /** Base name: object groups `<name>-a` / `<name>-b`. */
  groupName: string;
  /** The extended ACL holding the one deny entry (the operator applies it to interfaces). */
  acl: string;
  /** Sequence number of the deny entry; a swap uses this one and the next, alternately. */
  sequence: number;
  writeMemory: boolean;
  shell: CliShell;
}

async function show(shell: CliShell, commands: string[], signal?: AbortSignal): Promise<string[]> {
  return (await shell.interact(commands, CLI, signal)).map((a) => a.output);
}

/** Runs a configuration change (`configure terminal` … `end`), then `write memory` if asked. */
async function configure(shell: CliShell, lines: string[], writeMemory: boolean, signal?: AbortSignal): Promise<void> {
  await shell.interact(['configure terminal', ...lines, 'end', ...(writeMemory ? ['write memory'] : [])], CLI, signal);
}

/**
 * IOS object-group enforcement. Two network object groups alternate: a full replace fills
 * the group no deny entry references, adds `deny ip object-group <new> any` at the sequence
 * number next to the old entry, removes the old entry, then deletes the old group. Between
 * the add and the remove both entries match; traffic meets the old group or the new one,
 * never a half-filled one. A batch edits the group the deny entry references.
 */
export function objectGroupAdapter(o: ObjectGroupOptions): EnforcerAdapter {
  const groups = [`${o.groupName}-a`, `${o.groupName}-b`] as const;
  const other = (g: string) => (g === groups[0] ? groups[1] : groups[0]);

  async function state(signal?: AbortSignal) {
    const [acl, a, b] = await show(o.shell, [`show ip access-lists ${o.acl}`, ...groups.map((g) => `show object-group name ${g}`)], signal);
    const entries = parseAccessList(acl!);
    return { entries, denies: groupDenies(entries, groups), exists: [groupExists(a!, groups[0]), groupExists(b!, groups[1])] };
  }

  async function removeAll(signal?: AbortSignal): Promise<void> {
    const s = await state(signal);
    const lines = [
      ...(s.denies.length ? [`ip access-list extended ${o.acl}`, ...s.denies.map((d) => `no ${d.seq}`), 'exit'] : []),
      ...groups.filter((_, i) => s.exists[i]).map((g) => `no object-group network ${g}`),
    ];
    if (lines.length) await configure(o.shell, lines, o.writeMemory, signal);
  }

  /** The group the one deny entry references; undefined when there is none or several. */
  async function activeGroup(signal?: AbortSignal): Promise<string | undefined> {
    const denies = groupDenies(parseAccessList((await show(o.shell, [`show ip access-lists ${o.acl}`], signal))[0]!), groups);
    return denies.length === 1 ? denies[0]!.group : undefined;
  }

  return {
    async read(signal?: AbortSignal) {
      const group = await activeGroup(signal);
      return group ? parseObjectGroup((await show(o.shell, [`show object-group name ${group}`], signal))[0]!) : [];
    },

    async replaceAll(entries: readonly BlockEntry[], signal?: AbortSignal) {
      // Nothing to enforce: no deny entry and no group (some IOS releases refuse an empty
      // object group referenced by an ACL entry), which reads back as nothing enforced.
      if (entries.length === 0) return removeAll(signal);
      const s = await state(signal);
      const keep = [...s.denies].sort((x, y) => x.seq - y.seq)[0];
      const next = keep ? other(keep.group) : groups[0];
      const used = new Set(s.entries.map((e) => e.seq));
      const seq = [o.sequence, o.sequence + 1].find((n) => !used.has(n));
      if (seq === undefined) throw new IosError(`sequence numbers ${o.sequence} and ${o.sequence + 1} of ${o.acl} are both taken; one must be free for the swap`);
      const extra = s.denies.filter((d) => d !== keep);
      const lines = [
        // Leftover entries of an interrupted swap go first: the group to refill must be unreferenced.
        ...(extra.length ? [`ip access-list extended ${o.acl}`, ...extra.map((d) => `no ${d.seq}`), 'exit'] : []),
        ...(s.exists[groups.indexOf(next)] ? [`no object-group network ${next}`] : []),
        `object-group network ${next}`,
        ...entries.map((e) => groupMember(e.value)),
        'exit',
        `ip access-list extended ${o.acl}`,
        `${seq} deny ip object-group ${next} any`,
        ...(keep ? [`no ${keep.seq}`] : []),
        'exit',
        ...(keep ? [`no object-group network ${keep.group}`] : []),
      ];
      await configure(o.shell, lines, o.writeMemory, signal);
    },

    async applyBatch(change, _all, signal?: AbortSignal) {
      const group = await activeGroup(signal);
      if (!group) throw new IosError(`${o.acl} has no single deny entry for ${groups.join(' or ')}`);
      await configure(
        o.shell,
        [`object-group network ${group}`, ...change.remove.map((c) => `no ${groupMember(c)}`), ...change.add.map((e) => groupMember(e.value)), 'exit'],
        o.writeMemory,
        signal,
      );
    },

    removeAll,

    async probe(signal?: AbortSignal) {
      await show(o.shell, [`show ip access-lists ${o.acl}`], signal);
    },

    close: () => o.shell.close(),
  };
}

export interface StandardAclOptions {
  /** The numbered standard ACL (1–99, 1300–1999), owned by this enforcer. */
  acl: number;
  /** Keep `permit any` as the ACL's last entry, so that it passes what is not listed. */
  permitAny: boolean;
  writeMemory: boolean;
  shell: CliShell;
}

/**
 * For devices without object groups: a numbered standard ACL of `deny A.B.C.D WILDCARD` entries
 * (and a final `permit any`), edited in place by sequence number. Every write reads the ACL and
 * sends only the difference, adds first, so that no listed address is let through on the way;
 * it is not atomic (an observer sees the change line by line) and every entry is a line of the
 * ACL, so keep it small.
 */
export function standardAclAdapter(o: StandardAclOptions): EnforcerAdapter {
  const permit = `${LAST_SEQUENCE} permit any`;

  async function entries(signal?: AbortSignal) {
    return parseAccessList((await show(o.shell, [`show ip access-lists ${o.acl}`], signal))[0]!);
  }

  async function write(want: readonly string[], signal?: AbortSignal) {
    const current = await entries(signal);
    const denies = standardDenies(current);
    const have = new Set(denies.map((d) => d.cidr));
    const wanted = new Set(want);
    const used = new Set(current.map((e) => e.seq));
    let seq = 0;
    const nextSeq = () => {
      do seq += 1;
      while (used.has(seq));
      return seq;
    };
    const add = want.filter((c) => !have.has(c)).map((c) => `${nextSeq()} deny ${standardSource(c)}`);
    // An address listed twice (someone's edit) is drift too: the first entry stays.
    const seen = new Set<string>();
    const remove = denies.filter((d) => !wanted.has(d.cidr) || seen.has(d.cidr) || !seen.add(d.cidr)).map((d) => `no ${d.seq}`);
    const hasPermit = current.some((e) => e.seq === LAST_SEQUENCE && e.text === 'permit any');
    const fixPermit = o.permitAny && !hasPermit ? [...(used.has(LAST_SEQUENCE) ? [`no ${LAST_SEQUENCE}`] : []), permit] : [];
    if (add.length + remove.length + fixPermit.length === 0) return;
    await configure(o.shell, [`ip access-list standard ${o.acl}`, ...add, ...remove, ...fixPermit, 'exit'], o.writeMemory, signal);
  }

  return {
    async read(signal?: AbortSignal) {
      return standardDenies(await entries(signal)).map((d) => d.cidr);
    },
    replaceAll: (list, signal) => write(list.map((e) => e.value), signal),
    async removeAll(signal?: AbortSignal) {
      if ((await entries(signal)).length) await configure(o.shell, [`no access-list ${o.acl}`], o.writeMemory, signal);
    },
    async probe(signal?: AbortSignal) {
      await entries(signal);
    },
    close: () => o.shell.close(),
  };
}
