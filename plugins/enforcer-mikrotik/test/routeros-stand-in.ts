import { timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import ssh2 from 'ssh2';
import { sha256Fingerprint } from '../src/index.ts';

/*
 * Test stand-in for a MikroTik router: a real SSH server (ssh2's Server) whose exec channel
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

/**
 * An ed25519 key pair whose public half ssh2 can parse back: now and then ssh2's generator writes
 * one its own parser calls malformed (CI saw "Malformed OpenSSH public key"), so draw again.
 */
export function ed25519KeyPair(): { private: string; public: string } {
  for (let attempt = 0; ; attempt++) {
    const pair = ssh2.utils.generateKeyPairSync('ed25519');
    const parsed = ssh2.utils.parseKey(pair.public);
    if (!(parsed instanceof Error)) return pair;
    if (attempt === 20) throw parsed;
  }
}

export async function startRouterStandIn(auth: { user: string; password?: string; publicKey?: string }): Promise<RouterStandIn> {
  const hostKey = ed25519KeyPair();
  const hostPublic = ssh2.utils.parseKey(hostKey.public);
  if (hostPublic instanceof Error) throw hostPublic;
  const allowedKey = auth.publicKey ? ssh2.utils.parseKey(auth.publicKey) : undefined;
  if (allowedKey instanceof Error) throw allowedKey;
  const state: RouterState = { lists: new Map(), rules: [], execs: [] };
  const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

  const clients = new Set<ssh2.Connection>();
  const server = new ssh2.Server({ hostKeys: [hostKey.private] }, (client) => {
    clients.add(client);
    client.on('close', () => clients.delete(client));
    client.on('error', () => undefined);
    client.on('authentication', (ctx) => {
      if (ctx.username !== auth.user) return ctx.reject();
      if (ctx.method === 'password' && auth.password && same(Buffer.from(ctx.password), Buffer.from(auth.password))) return ctx.accept();
      if (ctx.method === 'publickey' && allowedKey && ctx.key.algo === allowedKey.type && same(ctx.key.data, allowedKey.getPublicSSH())) {
        if (!ctx.signature) return ctx.accept();
        if (allowedKey.verify(ctx.blob!, ctx.signature, ctx.hashAlgo) === true) return ctx.accept();
      }
      ctx.reject(['password', 'publickey']);
    });
    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        session.on('exec', (accept, _reject, info) => {
          const stream = accept();
          state.execs.push(info.command);
          let out = '';
          for (const line of info.command.split('\n')) {
            if (!line.trim()) continue;
            const r = interpret(state, line.trim());
            out += r.out;
            if (!r.ok) break;
          }
          stream.write(out);
          stream.exit(0);
          stream.end();
        });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    state,
    hostKeySha256: sha256Fingerprint(hostPublic.getPublicSSH()),
    enforced(comment = 'rampart-drop') {
      const lists = new Set(state.rules.filter((r) => r.comment === comment && r.action === 'drop').map((r) => r.srcList));
      return [...lists].flatMap((l) => [...(state.lists.get(l) ?? [])]);
    },
    disconnectAll() {
      for (const c of clients) c.end();
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
