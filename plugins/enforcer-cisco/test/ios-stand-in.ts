import { startSshStandIn, type StandInShell } from '@rampart/plugin-kit/testing';

/*
 * Test stand-in for a Cisco IOS router: a real SSH server (plugin-kit's startSshStandIn) whose
 * interactive shell speaks the part of the IOS CLI this enforcer uses, written from Cisco's
 * command references (Object Groups for ACLs; IP Access List Entry Sequence Numbering;
 * `show object-group`, `show ip access-lists`): a pty echo, the `Router#` / `Router(config…)#`
 * prompts, network object groups, extended and standard ACLs with sequence numbers, and the
 * `%` lines IOS prints for refused input. The wording of the refusals other than
 * `% Invalid input detected at '^' marker.` is the stand-in's, not checked on a device.
 */

type Mode = { kind: 'exec' } | { kind: 'config' } | { kind: 'group'; name: string } | { kind: 'acl'; name: string; standard: boolean };

export interface IosState {
  /** Network object groups: member lines as IOS prints them (`host A`, `A MASK`). */
  groups: Map<string, string[]>;
  /** ACLs by name or number: sequence number → entry text. */
  acls: Map<string, { standard: boolean; entries: Map<number, string> }>;
  /** `write memory` count. */
  saves: number;
  /** Lines typed in config mode, in order. */
  typed: string[];
  /** Input refused with `% Invalid input` (a device without the feature, a bad line). */
  refuse?: RegExp;
}

const IP = String.raw`\d{1,3}(?:\.\d{1,3}){3}`;

function prompt(mode: Mode): string {
  switch (mode.kind) {
    case 'exec':
      return 'Router#';
    case 'config':
      return 'Router(config)#';
    case 'group':
      return 'Router(config-network-group)#';
    case 'acl':
      return mode.standard ? 'Router(config-std-nacl)#' : 'Router(config-ext-nacl)#';
  }
}

function showAcl(state: IosState, name: string): string {
  const acl = state.acls.get(name);
  if (!acl) return '';
  const rows = [...acl.entries].sort(([a], [b]) => a - b).map(([seq, text]) => `    ${seq} ${text}${seq % 7 === 0 ? ' (12 matches)' : ''}\n`);
  return `${acl.standard ? 'Standard' : 'Extended'} IP access list ${name}\n${rows.join('')}`;
}

function inUse(state: IosState, group: string): boolean {
  return [...state.acls.values()].some((a) => [...a.entries.values()].some((t) => t.split(' ').includes(group)));
}

/** Standard ACL entry text as IOS prints it: a host bare, a network with its wildcard bits. */
function standardText(action: string, address: string, wildcard: string | undefined): string {
  const pad = action === 'deny' ? 'deny  ' : 'permit';
  return !wildcard || wildcard === '0.0.0.0' ? `${pad} ${address}` : `${pad} ${address}, wildcard bits ${wildcard}`;
}

/** Interprets one line; returns what IOS prints and the mode after it. */
export function interpret(state: IosState, mode: Mode, line: string): { out: string; mode: Mode } {
  const invalid = (): { out: string; mode: Mode } => ({ out: `${' '.repeat(prompt(mode).length)}^\n% Invalid input detected at '^' marker.\n\n`, mode });
  const ok = (next: Mode = mode, out = '') => ({ out, mode: next });
  const fail = (text: string) => ({ out: `% ${text}\n`, mode });
  let m: RegExpExecArray | null;
  if (state.refuse?.test(line)) return invalid();
  if (line === 'end') return ok({ kind: 'exec' });
  if (mode.kind === 'exec') {
    if (line === 'terminal length 0') return ok();
    if (line === 'configure terminal') return ok({ kind: 'config' }, 'Enter configuration commands, one per line.  End with CNTL/Z.\n');
    if (line === 'write memory') {
      state.saves += 1;
      return ok(mode, 'Building configuration...\n[OK]\n');
    }
    if ((m = /^show ip access-lists (\S+)$/.exec(line))) return ok(mode, showAcl(state, m[1]!));
    if ((m = /^show object-group name (\S+)$/.exec(line))) {
      const members = state.groups.get(m[1]!);
      return ok(mode, members ? `Network object group ${m[1]}\n${members.map((l) => ` ${l}\n`).join('')}` : '');
    }
    return invalid();
  }
  state.typed.push(line);
  if (line === 'exit') return ok(mode.kind === 'config' ? { kind: 'exec' } : { kind: 'config' });
  if (mode.kind !== 'config' && /^(object-group|ip access-list|no object-group|no access-list)/.test(line)) {
    // IOS leaves the submode for a global command; the stand-in does the same.
    return interpret(state, { kind: 'config' }, line);
  }
  if (mode.kind === 'config') {
    if ((m = /^object-group network (\S+)$/.exec(line))) {
      if (!state.groups.has(m[1]!)) state.groups.set(m[1]!, []);
      return ok({ kind: 'group', name: m[1]! });
    }
    if ((m = /^no object-group network (\S+)$/.exec(line))) {
      if (!state.groups.has(m[1]!)) return fail(`object-group ${m[1]} does not exist`);
      if (inUse(state, m[1]!)) return fail(`object-group ${m[1]} is in use by an access list and cannot be removed`);
      state.groups.delete(m[1]!);
      return ok();
    }
    if ((m = /^ip access-list (extended|standard) (\S+)$/.exec(line))) {
      const standard = m[1] === 'standard';
      const acl = state.acls.get(m[2]!);
      if (acl && acl.standard !== standard) return fail(`${m[2]} is not a ${m[1]} access list`);
      if (!acl) state.acls.set(m[2]!, { standard, entries: new Map() });
      return ok({ kind: 'acl', name: m[2]!, standard });
    }
    if ((m = /^no access-list (\d+)$/.exec(line))) {
      state.acls.delete(m[1]!);
      return ok();
    }
    return invalid();
  }
  if (mode.kind === 'group') {
    const members = state.groups.get(mode.name)!;
    if ((m = new RegExp(`^(no )?(host ${IP}|${IP} ${IP})$`).exec(line))) {
      const member = m[2]!;
      const at = members.indexOf(member);
      if (m[1]) {
        if (at >= 0) members.splice(at, 1);
      } else if (at < 0) members.push(member);
      return ok();
    }
    return invalid();
  }
  const acl = state.acls.get(mode.name)!;
  if ((m = /^no (\d+)$/.exec(line))) {
    acl.entries.delete(Number(m[1]));
    return ok();
  }
  const seqLine = /^(\d+) (.*)$/.exec(line);
  if (!seqLine) return invalid();
  const seq = Number(seqLine[1]);
  const body = seqLine[2]!;
  if (seq < 1 || seq > 2147483647) return invalid();
  if (acl.entries.has(seq)) return fail('Duplicate sequence number');
  if (!mode.standard && (m = /^deny ip object-group (\S+) any$/.exec(body))) {
    if (!state.groups.has(m[1]!)) return fail(`object-group ${m[1]} not found`);
    acl.entries.set(seq, body);
    return ok();
  }
  if (mode.standard && (m = new RegExp(`^(deny|permit) (?:(any)|(${IP})(?: (${IP}))?)$`).exec(body))) {
    acl.entries.set(seq, m[2] ? `${m[1]} any` : standardText(m[1]!, m[3]!, m[4]));
    return ok();
  }
  return invalid();
}

export interface IosStandIn {
  port: number;
  hostKeySha256: string;
  state: IosState;
  /** Lines received over SSH (exec and shell), in order. */
  received: string[];
  /** The members of the group the deny entry of `acl` references (what a packet meets). */
  blocked(acl?: string): string[];
  disconnectAll(): void;
  stop(): Promise<void>;
}

export async function startIosStandIn(auth: {
  user: string;
  password?: string;
  publicKey?: string;
  /** The login lands in user EXEC (`Router>`); `enable` with this secret leads to `Router#`. */
  userExec?: { enableSecret: string };
}): Promise<IosStandIn> {
  const state: IosState = { groups: new Map(), acls: new Map(), saves: 0, typed: [] };
  const ssh = await startSshStandIn({
    ...auth,
    shell(io: StandInShell) {
      let mode: Mode = { kind: 'exec' };
      let level: 'user' | 'password' | 'privileged' = auth.userExec ? 'user' : 'privileged';
      io.write(`\r\nUser Access Verification\r\n\r\n${level === 'user' ? 'Router>' : prompt(mode)}`);
      return (line: string) => {
        if (level === 'password') {
          // The password is not echoed.
          level = line === auth.userExec!.enableSecret ? 'privileged' : 'user';
          return io.write(level === 'privileged' ? `\r\n${prompt(mode)}` : '\r\n% Access denied\r\n\r\nRouter>');
        }
        if (level === 'user') {
          if (line.trim() === 'enable') {
            level = 'password';
            return io.write(`${line}\r\nPassword: `);
          }
          return io.write(`${line}\r\n% Invalid input detected at '^' marker.\r\nRouter>`);
        }
        const r = interpret(state, mode, line.trim());
        mode = r.mode;
        io.write(`${line}\r\n${r.out.replace(/\n/g, '\r\n')}${prompt(mode)}`);
      };
    },
  });
  return {
    port: ssh.port,
    hostKeySha256: ssh.hostKeySha256,
    state,
    received: ssh.received,
    blocked(acl = 'RAMPART-IN') {
      const entries = [...(state.acls.get(acl)?.entries.values() ?? [])];
      return entries.flatMap((t) => {
        const m = /^deny ip object-group (\S+) any$/.exec(t);
        return m ? (state.groups.get(m[1]!) ?? []) : [];
      });
    },
    disconnectAll: () => ssh.disconnectAll(),
    stop: () => ssh.stop(),
  };
}
