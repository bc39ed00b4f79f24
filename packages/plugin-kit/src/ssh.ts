import type { Client, ClientChannel, ConnectConfig } from 'ssh2';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { secret } from '@rampart/contracts';
import { abortable } from './abort.ts';

/*
 * SSH for the enforcers that drive a device's CLI (routers, firewalls, appliances): one session per
 * target with a pinned host key, and the options every such plugin takes under `options`.
 */

/** ssh2 is loaded on the first connection: evaluating it at start costs every agent ~6 MB of RSS. */
let ssh2: Promise<typeof import('ssh2')> | undefined;

export interface SshTarget {
  host: string;
  port: number;
  username: string;
  password?: string;
  privateKey?: Buffer;
  passphrase?: string;
  /** `SHA256:<base64>` as `ssh-keygen -lf` prints it; the connection fails on any other key. */
  hostKeySha256: string;
  timeoutMs: number;
}

/** The OpenSSH-style fingerprint of a raw host key. */
export function sha256Fingerprint(key: Buffer): string {
  // node:crypto is loaded when a host key is checked, not with plugin-kit.
  return `SHA256:${process.getBuiltinModule('node:crypto').createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

export class SshError extends Error {
  readonly code = 'SSH_FAILED';
  constructor(message: string) {
    super(message);
    this.name = 'SshError';
  }
}

/** One SSH connection, opened on first use and again after it drops; commands run via `exec`. */
export class SshSession {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;

  constructor(private readonly target: SshTarget) {}

  private connect(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (ssh2 ??= import('ssh2')).then((lib) => this.open(new lib.Client()));
    return this.connecting;
  }

  private open(client: Client): Promise<Client> {
    return new Promise<Client>((resolve, reject) => {
      let seenKey = '';
      const config: ConnectConfig = {
        host: this.target.host,
        port: this.target.port,
        username: this.target.username,
        readyTimeout: this.target.timeoutMs,
        hostVerifier: (key: Buffer) => {
          seenKey = sha256Fingerprint(key);
          return seenKey === this.target.hostKeySha256;
        },
        ...(this.target.privateKey
          ? { privateKey: this.target.privateKey, passphrase: this.target.passphrase }
          : { password: this.target.password }),
      };
      let ready = false;
      client.once('ready', () => {
        ready = true;
        this.client = client;
        this.connecting = undefined;
        resolve(client);
      });
      // Listened for the whole life of the connection: an 'error' without a listener would
      // crash the agent. After 'ready', the 'close' that follows drops the connection.
      client.on('error', (err) => {
        if (ready) return;
        this.connecting = undefined;
        const pinned = seenKey && seenKey !== this.target.hostKeySha256;
        reject(new SshError(pinned ? `host key ${seenKey} does not match the pinned key` : `ssh: ${err.message}`));
      });
      client.on('close', () => {
        if (this.client === client) this.client = undefined;
      });
      client.connect(config);
      // Commands and their answers (an exec, a CLI line and its prompt) are small writes each
      // waiting on the other side: without TCP_NODELAY, Nagle's algorithm and delayed ACKs cost
      // 40-200 ms per exchange (bench/appliances.ts: ~180 ms per exec on loopback before this).
      client.setNoDelay(true);
    });
  }

  /**
   * Runs `command` (may span lines) and returns stdout and stderr together. An aborted `signal`
   * closes the channel and rejects with the signal's reason.
   */
  async exec(command: string, signal?: AbortSignal): Promise<string> {
    const client = await abortable(this.connect(), signal);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      client.exec(command, (err, stream) => {
        if (err) return reject(new SshError(`ssh exec: ${err.message}`));
        let out = '';
        let timedOut = false;
        // A partial answer must not pass for a whole one: a timeout or an abort fails the call.
        const timer = setTimeout(() => {
          timedOut = true;
          stream.close();
        }, this.target.timeoutMs);
        const onAbort = () => stream.close();
        if (signal?.aborted) onAbort();
        else signal?.addEventListener('abort', onAbort, { once: true });
        stream.on('data', (d: Buffer) => (out += d.toString('utf8')));
        stream.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
        stream.on('close', () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          if (signal?.aborted) reject(signal.reason);
          else if (timedOut) reject(new SshError(`ssh exec: no complete answer within ${this.target.timeoutMs} ms`));
          else resolve(out.replace(/\r/g, ''));
        });
      });
    });
  }

  /**
   * Types `lines` one by one into an interactive shell (`ssh2` `client.shell()`, with a pty),
   * the way netmiko-style tools drive a router CLI: waits for the prompt after login, sends
   * `o.setup` (e.g. `terminal length 0`) and then each line, waiting for the prompt after each.
   * Returns each line's output (the echo and the prompt stripped). The first output line
   * matching `o.errorLine` fails the call with that line (`SshCliError`), and nothing after it
   * is sent. No prompt within the session's timeout after a line, or an abort, closes the
   * channel and rejects, as `exec` does.
   */
  async interact(lines: readonly string[], o: InteractOptions = {}, signal?: AbortSignal): Promise<CliAnswer[]> {
    const client = await abortable(this.connect(), signal);
    if (signal?.aborted) throw signal.reason;
    const timeoutMs = this.target.timeoutMs;
    const stream = await new Promise<ClientChannel>((resolve, reject) => {
      // A channel that opens after the call gave up (timeout, abort) is closed at once.
      let settled = false;
      const give = (err: unknown) => {
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(err);
      };
      const timer = setTimeout(() => give(new SshError(`ssh shell: no channel within ${timeoutMs} ms`)), timeoutMs);
      const onAbort = () => give(signal!.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      client.shell({ term: 'vt100', cols: 511, rows: 24 }, (err, channel) => {
        if (settled) {
          channel?.close();
          return;
        }
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(new SshError(`ssh shell: ${err.message}`));
        else resolve(channel);
      });
    });
    return new CliDriver(stream, timeoutMs, o).run(lines, signal);
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    await new Promise<void>((resolve) => {
      client.once('close', () => resolve());
      client.end();
    });
  }
}

/**
 * The SSH options every CLI-driven enforcer takes under `options` (spread into its own
 * `options` object): a pinned host key is required when active (`requirePinnedKey`).
 */
export const sshOptionsShape = {
  port: z.number().int().min(1).max(65535).default(22),
  host_key_sha256: z
    .string()
    .regex(/^$|^SHA256:[A-Za-z0-9+/]{43}$/, { message: 'SHA256:<base64> as ssh-keygen -lf prints it' })
    .default('')
    .describe("The device's pinned host key fingerprint"),
  private_key_path: z.string().max(4096).default('').describe('OpenSSH private key; used instead of the password'),
  private_key_passphrase: secret(z.string().max(1024).default('').describe('Secret; returned masked')),
  timeout_seconds: z.number().int().min(1).max(600).default(60),
};

export const SSH_OPTION_DEFAULTS = {
  port: 22,
  host_key_sha256: '',
  private_key_path: '',
  private_key_passphrase: '',
  timeout_seconds: 60,
};

export type SshOptions = { [K in keyof typeof sshOptionsShape]: z.infer<(typeof sshOptionsShape)[K]> };

/** The target of `host:port` (or `host`, with `options.port`) as SshSession takes it; reads the key file. */
export async function sshTarget(
  address: { host: string; port?: number },
  username: string,
  password: string,
  o: SshOptions,
): Promise<SshTarget> {
  return {
    host: address.host,
    port: address.port ?? o.port,
    username,
    hostKeySha256: o.host_key_sha256,
    timeoutMs: o.timeout_seconds * 1000,
    ...(o.private_key_path
      ? { privateKey: await readFile(o.private_key_path), passphrase: o.private_key_passphrase || undefined }
      : { password }),
  };
}

/**
 * `host`, `host:port` or `[v6]:port` entries of a comma-separated `connections` (or `address`)
 * setting; throws on an empty or malformed entry, naming it.
 */
export function parseConnections(text: string): { host: string; port?: number }[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const m = /^(?:\[([^\]]+)\]|([^:\s[\]]+))(?::(\d{1,5}))?$/.exec(entry);
      const port = m?.[3] ? Number(m[3]) : undefined;
      if (!m || (port !== undefined && (port < 1 || port > 65535))) throw new Error(`not a host or host:port: '${entry}'`);
      return { host: (m[1] ?? m[2])!, ...(port ? { port } : {}) };
    });
}

/**
 * SSH (RFC 4253 §6.1) guarantees packets of 35,000 bytes; a larger exec request may be refused
 * (ssh2's server drops it, OpenSSH stops at 256 KB). Commands sent in one exec stay under this.
 */
export const MAX_EXEC_BYTES = 32_000;

/**
 * Groups `lines` into exec-sized commands joined by `\n`: at most `maxLines` lines and
 * `maxBytes` UTF-8 bytes each (a single longer line goes alone).
 */
export function execChunks(lines: readonly string[], maxLines: number, maxBytes = MAX_EXEC_BYTES): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let bytes = 0;
  for (const line of lines) {
    const size = Buffer.byteLength(line) + 1;
    if (current.length > 0 && (current.length >= maxLines || bytes + size > maxBytes)) {
      out.push(current.join('\n'));
      current = [];
      bytes = 0;
    }
    current.push(line);
    bytes += size;
  }
  if (current.length > 0) out.push(current.join('\n'));
  return out;
}

/** A device's CLI prompt: `Router#`, `Router(config)#`, `Router(config-ext-nacl)#`, `asa/pri/act#`. */
export const CLI_PROMPT = /^[A-Za-z0-9_./:-]{1,64}(?:\([A-Za-z0-9 _./-]{1,40}\))?[#>] ?$/;

export interface InteractOptions {
  /** Lines sent before `lines`, their output not returned (default `['terminal length 0']`). */
  setup?: readonly string[];
  /** The prompt the last line of output must match (default `CLI_PROMPT`). */
  prompt?: RegExp;
  /** An output line that means the command failed (IOS `^%`, ASA `^ERROR:`). */
  errorLine?: RegExp;
  /**
   * Fails before sending anything when the login prompt ends in `>` (user EXEC): the account
   * must land in privileged EXEC (`#`), e.g. privilege 15 or ASA `auto-enable` — unless
   * `enablePassword` is set: then `enable` is sent and the password typed at `Password:`.
   */
  privileged?: boolean;
  /** Answers the `Password:` prompt of `enable` when the login lands in user EXEC. */
  enablePassword?: string;
}

export interface CliAnswer {
  command: string;
  output: string;
}

/** A command the device refused, with the line it printed. */
export class SshCliError extends Error {
  readonly code = 'CLI_COMMAND_FAILED';
  constructor(
    readonly command: string,
    readonly detail: string,
  ) {
    super(`'${command.slice(0, 200)}' failed: ${detail.slice(0, 300)}`);
    this.name = 'SshCliError';
  }
}

/** One interactive shell: sends a line, collects output until the prompt comes back. */
class CliDriver {
  private buffer = '';
  /** The last prompt seen. */
  private prompt = '';
  private waiter: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly stream: ClientChannel,
    private readonly timeoutMs: number,
    private readonly o: InteractOptions,
  ) {
    stream.on('data', (d: Buffer) => this.feed(d.toString('utf8')));
    stream.stderr.on('data', (d: Buffer) => this.feed(d.toString('utf8')));
    stream.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
  }

  private feed(text: string) {
    this.buffer += text.replace(/\r/g, '');
    this.waiter?.();
  }

  /** Output up to the prompt (which is removed), or undefined while the prompt has not come. */
  private take(prompt: RegExp): string | undefined {
    const cut = this.buffer.lastIndexOf('\n');
    const last = this.buffer.slice(cut + 1);
    if (!prompt.test(last)) return undefined;
    const out = this.buffer.slice(0, cut + 1);
    this.prompt = last;
    this.buffer = '';
    return out;
  }

  private waitPrompt(what: string, signal?: AbortSignal, prompt: RegExp = this.o.prompt ?? CLI_PROMPT): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish(new SshError(`ssh shell: no prompt within ${this.timeoutMs} ms after '${what.slice(0, 100)}'`)), this.timeoutMs);
      const onAbort = () => finish(signal!.reason);
      const finish = (err?: unknown, out?: string) => {
        clearTimeout(timer);
        this.waiter = undefined;
        signal?.removeEventListener('abort', onAbort);
        if (err !== undefined) reject(err);
        else resolve(out!);
      };
      this.waiter = () => {
        const out = this.take(prompt);
        if (out !== undefined) finish(undefined, out);
        else if (this.closed) finish(new SshError(`ssh shell: the device closed the session after '${what.slice(0, 100)}'`));
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiter();
    });
  }

  private async send(line: string, signal?: AbortSignal): Promise<string> {
    this.stream.write(`${line}\n`);
    const out = await this.waitPrompt(line, signal);
    // A device echoes what was typed (the pty); the answer is what follows.
    const lines = out.split('\n');
    if (lines[0]?.trim() === line.trim()) lines.shift();
    const answer = lines.join('\n');
    const failed = this.o.errorLine && lines.find((l) => this.o.errorLine!.test(l));
    if (failed) throw new SshCliError(line, failed.trim());
    return answer;
  }

  /** From user EXEC (`>`) to privileged EXEC (`#`) with `enable`, or a clear refusal. */
  private async enable(signal?: AbortSignal): Promise<void> {
    const userExec = this.prompt.trim();
    if (this.o.enablePassword === undefined)
      throw new SshError(`ssh shell: '${userExec}' is user EXEC; the account must log in to privileged EXEC (#)`);
    this.stream.write('enable\n');
    await this.waitPrompt('enable', signal, /^Password: ?$/);
    // The password is not echoed; what follows is a prompt, privileged or not.
    this.stream.write(`${this.o.enablePassword}\n`);
    const cli = this.o.prompt ?? CLI_PROMPT;
    // A refused password is answered by another `Password:` (ASA) or the `>` prompt (IOS).
    const out = await this.waitPrompt('the enable password', signal, new RegExp(`${cli.source}|^Password: ?$`));
    if (!this.prompt.trimEnd().endsWith('#')) {
      const why = out.split('\n').map((l) => l.trim()).find((l) => l) ?? 'the enable password was refused';
      throw new SshError(`ssh shell: enable failed: ${why.slice(0, 200)}`);
    }
  }

  async run(lines: readonly string[], signal?: AbortSignal): Promise<CliAnswer[]> {
    try {
      await this.waitPrompt('login', signal);
      if (this.o.privileged && this.prompt.trimEnd().endsWith('>')) await this.enable(signal);
      for (const line of this.o.setup ?? ['terminal length 0']) await this.send(line, signal);
      const answers: CliAnswer[] = [];
      for (const command of lines) answers.push({ command, output: await this.send(command, signal) });
      return answers;
    } finally {
      this.stream.close();
    }
  }
}
