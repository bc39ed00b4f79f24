import { startSshStandIn } from '@rampart/plugin-kit/testing';

/*
 * Test stand-in for a MikroTik router: a real SSH server (plugin-kit's startSshStandIn) whose exec channel
 * interprets the RouterOS commands the enforcer sends and keeps address lists and filter rules.
 * Like RouterOS, a failing command prints an error and stops the rest of that exec.
 */

export interface FilterRule {
  id: number;
  chain: string;
  action: string;
  srcList: string;
  comment: string;
}

export interface RouterState {
  lists: Map<string, Set<string>>;
  rules: FilterRule[];
  /** Every exec the router received, for assertions on batching. */
  execs: string[];
  /** A user without the write policy: every change fails as RouterOS reports it. */
  readOnly?: boolean;
}


function listForm(address: string): string {
  return address.endsWith('/32') ? address.slice(0, -3) : address;
}

function canonical(address: string): string {
  return address.includes('/') ? address : `${address}/32`;
}

export function interpret(state: RouterState, line: string): { out: string; ok: boolean } {
  let m: RegExpExecArray | null;
  const fail = (out: string) => ({ out: `${out}\n`, ok: false });
  if (state.readOnly && / (add|set|remove) /.test(line)) return fail('failure: not enough permissions (9)');
  if ((m = /^\/ip firewall filter print terse without-paging where comment="([^"]+)"$/.exec(line))) {
    const rows = state.rules
      .map((r, i) => ({ r, i }))
      .filter(({ r }) => r.comment === m![1])
      .map(({ r, i }) => ` ${i}    chain=${r.chain} action=${r.action} src-address-list=${r.srcList} log=no log-prefix="" comment=${r.comment}`);
    return { out: rows.map((r) => `${r}\n`).join(''), ok: true };
  }
  if (line === '/ip firewall filter print count-only') return { out: `${state.rules.length}\n`, ok: true };
  if ((m = /^\/ip firewall filter add chain=(\w+) action=drop src-address-list=(\S+) comment="([^"]+)"( place-before=0)?$/.exec(line))) {
    const rule = { id: state.rules.length + 1000, chain: m[1]!, action: 'drop', srcList: m[2]!, comment: m[3]! };
    if (m[4]) {
      if (state.rules.length === 0) return fail('failure: no such item');
      state.rules.unshift(rule);
    } else state.rules.push(rule);
    return { out: '', ok: true };
  }
  if ((m = /^\/ip firewall filter set \[find comment="([^"]+)"\] src-address-list=(\S+)$/.exec(line))) {
    for (const r of state.rules) if (r.comment === m[1]) r.srcList = m[2]!;
    return { out: '', ok: true };
  }
  if ((m = /^\/ip firewall filter remove \[find comment="([^"]+)"\]$/.exec(line))) {
    state.rules = state.rules.filter((r) => r.comment !== m![1]);
    return { out: '', ok: true };
  }
  if ((m = /^\/ip firewall address-list print terse without-paging where list="([^"]+)"$/.exec(line))) {
    const entries = [...(state.lists.get(m[1]!) ?? [])];
    return {
      out: entries.map((a, i) => ` ${i}   list=${m![1]} address=${listForm(a)} creation-time=nov/23/2026 10:00:00 dynamic=no\n`).join(''),
      ok: true,
    };
  }
  if ((m = /^\/ip firewall address-list add list=(\S+) address=(\S+) comment="[^"]*"$/.exec(line))) {
    const list = state.lists.get(m[1]!) ?? new Set<string>();
    state.lists.set(m[1]!, list);
    const address = canonical(m[2]!);
    if (list.has(address)) return fail('failure: already have such entry');
    list.add(address);
    return { out: '', ok: true };
  }
  if ((m = /^\/ip firewall address-list remove \[find list="([^"]+)" address="([^"]+)"\]$/.exec(line))) {
    state.lists.get(m[1]!)?.delete(canonical(m[2]!));
    return { out: '', ok: true };
  }
  if ((m = /^\/ip firewall address-list remove \[find list="([^"]+)"\]$/.exec(line))) {
    state.lists.delete(m[1]!);
    return { out: '', ok: true };
  }
  return fail(`bad command name ${line.split(' ')[0] ?? ''} (line 1 column 1)`);
}

export interface RouterStandIn {
  port: number;
  state: RouterState;
  hostKeySha256: string;
  /** Addresses the drop rules of `comment` block now (what a packet would meet). */
  enforced(comment?: string): string[];
  /** Drops every SSH connection, as a router reboot does. */
  disconnectAll(): void;
  stop(): Promise<void>;
}

export async function startRouterStandIn(auth: { user: string; password?: string; publicKey?: string }): Promise<RouterStandIn> {
  const state: RouterState = { lists: new Map(), rules: [], execs: [] };
  const ssh = await startSshStandIn({
    ...auth,
    exec(command) {
      state.execs.push(command);
      let out = '';
      for (const line of command.split('\n')) {
        if (!line.trim()) continue;
        const r = interpret(state, line.trim());
        out += r.out;
        if (!r.ok) break;
      }
      return out;
    },
  });
  return {
    port: ssh.port,
    state,
    hostKeySha256: ssh.hostKeySha256,
    enforced(comment = 'rampart-drop') {
      const lists = new Set(state.rules.filter((r) => r.comment === comment && r.action === 'drop').map((r) => r.srcList));
      return [...lists].flatMap((l) => [...(state.lists.get(l) ?? [])]);
    },
    disconnectAll: () => ssh.disconnectAll(),
    stop: () => ssh.stop(),
  };
}
