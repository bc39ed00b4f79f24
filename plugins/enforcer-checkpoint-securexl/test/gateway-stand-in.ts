import { startSshStandIn } from '@rampart/plugin-kit/testing';

/*
 * Test stand-in for one Check Point gateway (a cluster member) in Expert mode: a real SSH server
 * (plugin-kit's startSshStandIn) whose exec channel interprets, line by line, the bash the
 * enforcer sends: `source` of the Check Point profile scripts, the `rx` helper, `vsenv <id>`,
 * heredocs into files, `rm -f`, `echo`, and `fwaccel dos deny|blacklist -a/-d/-F/-s/-l` on one
 * deny list per virtual system.
 *
 * From the reference (R80.20 CLI guide, `fwaccel dos blacklist` example): `-a` prints
 * `Adding <ip>`, `-d` `Deleting <ip>`, `-F` `All blacklist entries deleted`, `-s` one address a
 * line, newest first, or `The blacklist is empty`. The deny form's wording ("deny list"), the
 * error messages and the vsenv line are this stand-in's own (no transcript of them was found).
 */

export type FwaccelVersion = 'deny' | 'blacklist-only';

export interface GatewayState {
  /** Deny list by VSID ('0' on a gateway that is not VSX), newest last. */
  lists: Map<string, string[]>;
  files: Map<string, string[]>;
  /** Virtual systems that exist (VSX); empty for a plain gateway. */
  vsids: Set<string>;
  /** `blacklist-only`: before R80.40 JHF T92, no `deny` and no `-l`. */
  version: FwaccelVersion;
  /** A deny list longer than this refuses `-a` (a fault to inject). */
  capacity: number;
  execs: string[];
}

export interface GatewayStandIn {
  port: number;
  hostKeySha256: string;
  state: GatewayState;
  /** The addresses each VS's deny list holds, sorted, as CIDRs. */
  enforced(vs?: string): string[];
  /** A reboot: every deny list is lost (they live in memory) and the connections drop. */
  reboot(): void;
  stop(): Promise<void>;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const FAILED = /^vsenv (\S+) \|\| \{ echo "rampart-failed \$\?: vsenv \S+"; exit 1; \}$/;

interface Result {
  out: string;
  rc: number;
}

function fwaccel(state: GatewayState, vs: string, argv: string[]): Result {
  const [tool, dos, sub, flag, arg] = argv;
  const usage = { out: `Usage: fwaccel dos ${state.version === 'deny' ? 'deny' : 'blacklist'} [-a <ip> | -d <ip> | -F | -s${state.version === 'deny' ? ' | -l <file>' : ''}]`, rc: 1 };
  if (tool === 'g_fwaccel') return { out: 'bash: g_fwaccel: command not found', rc: 127 };
  if (tool !== 'fwaccel' || dos !== 'dos') return usage;
  if (sub !== 'blacklist' && !(sub === 'deny' && state.version === 'deny')) return usage;
  const noun = sub === 'deny' ? 'deny list' : 'blacklist';
  const list = state.lists.get(vs) ?? [];
  state.lists.set(vs, list);
  const add = (ip: string): Result => {
    if (!IPV4.test(ip)) return { out: `Error: invalid IPv4 address '${ip}'`, rc: 1 };
    if (list.includes(ip)) return { out: `Adding ${ip}`, rc: 0 };
    if (list.length >= state.capacity) return { out: `Error: the ${noun} is full`, rc: 1 };
    list.push(ip);
    return { out: `Adding ${ip}`, rc: 0 };
  };
  switch (flag) {
    case '-a':
      return argv.length === 5 ? add(arg!) : usage;
    case '-d': {
      const at = list.indexOf(arg ?? '');
      if (at >= 0) list.splice(at, 1);
      return { out: `Deleting ${arg}`, rc: 0 };
    }
    case '-F':
      list.length = 0;
      return { out: `All ${noun} entries deleted`, rc: 0 };
    case '-s':
      return { out: list.length === 0 ? `The ${noun} is empty` : [...list].reverse().join('\n'), rc: 0 };
    case '-l': {
      if (state.version !== 'deny') return usage;
      const lines = state.files.get(arg ?? '');
      if (!lines) return { out: `Error: cannot open file ${arg}`, rc: 1 };
      for (const line of lines.filter((l) => l.trim())) {
        const r = add(line.trim());
        if (r.rc !== 0) return r;
      }
      return { out: '', rc: 0 };
    }
    default:
      return usage;
  }
}

/** Runs one exec's script; returns what the channel prints. */
export function interpret(state: GatewayState, command: string): string {
  const out: string[] = [];
  let vs = '0';
  let vsenv = false;
  let heredoc: { file: string; lines: string[]; end: string } | undefined;
  for (const raw of command.split('\n')) {
    if (heredoc) {
      if (raw === heredoc.end) {
        state.files.set(heredoc.file, heredoc.lines);
        heredoc = undefined;
      } else heredoc.lines.push(raw);
      continue;
    }
    const line = raw.trim();
    let m: RegExpExecArray | null;
    if (!line || line === 'source /etc/profile.d/CP.sh' || line.startsWith('rx() {')) continue;
    if (line === 'source /etc/profile.d/vsenv.sh') {
      vsenv = true;
      continue;
    }
    if ((m = FAILED.exec(line))) {
      if (!vsenv) return [...out, 'bash: vsenv: command not found', `rampart-failed 127: vsenv ${m[1]}`, ''].join('\n');
      if (!state.vsids.has(m[1]!)) return [...out, `Virtual System ${m[1]} does not exist`, `rampart-failed 1: vsenv ${m[1]}`, ''].join('\n');
      vs = m[1]!;
      out.push(`Context is set to Virtual Device vs${vs} (ID ${vs}).`);
      continue;
    }
    if ((m = /^echo '?([^']*)'?$/.exec(line))) {
      out.push(m[1]!);
      continue;
    }
    if ((m = /^umask 077; cat (>>?) (\S+) <<'(\w+)'$/.exec(line))) {
      heredoc = { file: m[2]!, lines: m[1] === '>>' ? [...(state.files.get(m[2]!) ?? [])] : [], end: m[3]! };
      continue;
    }
    if ((m = /^rm -f (\S+)$/.exec(line))) {
      state.files.delete(m[1]!);
      continue;
    }
    if (line.startsWith('rx ')) {
      const argv = line.slice(3).split(/\s+/);
      const r = fwaccel(state, vs, argv);
      if (r.out) out.push(r.out);
      if (r.rc !== 0) return [...out, `rampart-failed ${r.rc}: ${argv.join(' ')}`, ''].join('\n');
      continue;
    }
    out.push(`bash: ${line.split(' ')[0]}: command not found`);
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

export async function startGatewayStandIn(auth: { user: string; password?: string; publicKey?: string }, vsids: string[] = []): Promise<GatewayStandIn> {
  const state: GatewayState = { lists: new Map(), files: new Map(), vsids: new Set(vsids), version: 'deny', capacity: Infinity, execs: [] };
  const ssh = await startSshStandIn({
    ...auth,
    exec(command) {
      state.execs.push(command);
      return interpret(state, command);
    },
  });
  return {
    port: ssh.port,
    hostKeySha256: ssh.hostKeySha256,
    state,
    enforced(vs = '0') {
      return (state.lists.get(vs) ?? []).map((ip) => `${ip}/32`).sort();
    },
    reboot() {
      state.lists.clear();
      ssh.disconnectAll();
    },
    stop: () => ssh.stop(),
  };
}
