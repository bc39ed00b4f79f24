import { startSshStandIn, type StandInShell } from '@rampart/plugin-kit/testing';

/*
 * Test stand-in for a Cisco ASA: a real SSH server whose interactive shell speaks the shun
 * commands of the ASA command reference (`shun`, `no shun`, `show shun`, `clear shun`,
 * `terminal pager`), with the `asa#` prompt and `ERROR:` lines for refused input. The exact
 * wording of the refusals is the stand-in's, not checked on a device. `reload()` loses every
 * shun and drops the sessions, as a reload or a failover does.
 */

export interface AsaState {
  /** Shunned source addresses with the interface ASA found them on. */
  shuns: Map<string, string>;
  /** Commands refused with an ERROR line (a read-only account, a bad template). */
  refuse?: RegExp;
}

const IP = String.raw`\d{1,3}(?:\.\d{1,3}){3}`;

export function interpret(state: AsaState, line: string): string {
  let m: RegExpExecArray | null;
  if (state.refuse?.test(line)) return `ERROR: % Invalid input detected at '^' marker.\n`;
  if (line === 'terminal pager 0') return '';
  if (line === 'show shun') return [...state.shuns].map(([ip, itf]) => `shun (${itf}) ${ip} 0.0.0.0 0 0 0\n`).join('');
  if (line === 'clear shun') {
    state.shuns.clear();
    return '';
  }
  if ((m = new RegExp(`^shun (${IP})(?: interface (\\S+))?$`).exec(line))) {
    if (state.shuns.has(m[1]!)) return `ERROR: Shun for ${m[1]} already exists\n`;
    state.shuns.set(m[1]!, m[2] ?? 'outside');
    return `Shun ${m[1]} added in context: single_vf\nShunning ${m[1]} 0.0.0.0 0 0 0\n`;
  }
  if ((m = new RegExp(`^no shun (${IP})(?: interface \\S+)?$`).exec(line))) {
    if (!state.shuns.delete(m[1]!)) return `ERROR: Shun for ${m[1]} does not exist\n`;
    return '';
  }
  return `ERROR: % Invalid input detected at '^' marker.\n`;
}

export interface AsaStandIn {
  port: number;
  hostKeySha256: string;
  state: AsaState;
  received: string[];
  /** A reload: every shun is lost and every session dropped. */
  reload(): void;
  stop(): Promise<void>;
}

export async function startAsaStandIn(auth: {
  user: string;
  password?: string;
  /** The login lands in `asa>` (no `auto-enable`); `enable` asks for this password. */
  userExec?: { enablePassword: string };
}): Promise<AsaStandIn> {
  const state: AsaState = { shuns: new Map() };
  const ssh = await startSshStandIn({
    ...auth,
    shell(io: StandInShell) {
      let level: 'user' | 'password' | 'privileged' = auth.userExec ? 'user' : 'privileged';
      let tries = 0;
      io.write(`Type help or '?' for a list of available commands.\r\n${level === 'user' ? 'asa> ' : 'asa# '}`);
      return (line: string) => {
        if (level === 'password') {
          if (line === auth.userExec!.enablePassword) {
            level = 'privileged';
            return io.write('\r\nasa# ');
          }
          // ASA asks again, three times, then gives up.
          tries += 1;
          if (tries < 3) return io.write('\r\nInvalid password\r\nPassword: ');
          level = 'user';
          return io.write('\r\nAccess denied.\r\nasa> ');
        }
        if (level === 'user') {
          if (line.trim() === 'enable') {
            level = 'password';
            tries = 0;
            return io.write(`${line}\r\nPassword: `);
          }
          return io.write(`${line}\r\nERROR: % Invalid input detected at '^' marker.\r\nasa> `);
        }
        const out = interpret(state, line.trim());
        io.write(`${line}\r\n${out.replace(/\n/g, '\r\n')}asa# `);
      };
    },
  });
  return {
    port: ssh.port,
    hostKeySha256: ssh.hostKeySha256,
    state,
    received: ssh.received,
    reload() {
      state.shuns.clear();
      ssh.disconnectAll();
    },
    stop: () => ssh.stop(),
  };
}
