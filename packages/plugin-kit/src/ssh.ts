import { createHash } from 'node:crypto';
import type { Client, ConnectConfig } from 'ssh2';
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
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
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
      // Commands and their answers are small writes each waiting on the other side: without
      // TCP_NODELAY, Nagle's algorithm and delayed ACKs cost about 40-200 ms per exchange
      // (measured by bench/appliances.ts: ~180 ms per exec on loopback before this).
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
