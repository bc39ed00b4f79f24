import { timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import ssh2 from 'ssh2';
import { sha256Fingerprint } from '../ssh.ts';

/*
 * The SSH half of a device stand-in (conventions §12: stand-ins are tests, not products): a real
 * SSH server (ssh2's Server) with password and public-key authentication, whose exec channels
 * and interactive shells are answered by the device's interpreter. What the device does with a
 * command is the stand-in's; this file only carries bytes.
 */

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

/** An interactive shell: lines typed arrive through `onLine`; `write` prints, `end` hangs up. */
export interface StandInShell {
  write(text: string): void;
  end(): void;
}

export interface SshStandInOptions {
  user: string;
  password?: string;
  /** An OpenSSH public key (`ssh-ed25519 AAAA…`) accepted for `user`. */
  publicKey?: string;
  /** Answers one exec request; the returned text is the channel's output (exit status 0). */
  exec?(command: string): string | Promise<string>;
  /**
   * Opens an interactive shell (`ssh host` without a command): returns the handler of each line
   * the client sends (without its line end). Without it, shell requests are refused.
   */
  shell?(io: StandInShell): (line: string) => void | Promise<void>;
}

export interface SshStandIn {
  port: number;
  hostKeySha256: string;
  /** Every exec command and every shell line received, in order. */
  received: string[];
  /** Drops every SSH connection, as a device reboot does. */
  disconnectAll(): void;
  stop(): Promise<void>;
}

export async function startSshStandIn(o: SshStandInOptions): Promise<SshStandIn> {
  const hostKey = ed25519KeyPair();
  const hostPublic = ssh2.utils.parseKey(hostKey.public);
  if (hostPublic instanceof Error) throw hostPublic;
  const allowedKey = o.publicKey ? ssh2.utils.parseKey(o.publicKey) : undefined;
  if (allowedKey instanceof Error) throw allowedKey;
  const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);
  const received: string[] = [];

  const clients = new Set<ssh2.Connection>();
  const server = new ssh2.Server({ hostKeys: [hostKey.private] }, (client) => {
    clients.add(client);
    client.on('close', () => clients.delete(client));
    client.on('error', () => undefined);
    client.on('authentication', (ctx) => {
      if (ctx.username !== o.user) return ctx.reject();
      if (ctx.method === 'password' && o.password && same(Buffer.from(ctx.password), Buffer.from(o.password))) return ctx.accept();
      if (ctx.method === 'publickey' && allowedKey && ctx.key.algo === allowedKey.type && same(ctx.key.data, allowedKey.getPublicSSH())) {
        if (!ctx.signature) return ctx.accept();
        if (allowedKey.verify(ctx.blob!, ctx.signature, ctx.hashAlgo) === true) return ctx.accept();
      }
      ctx.reject(['password', 'publickey']);
    });
    client.on('ready', () => {
      // Not in @types/ssh2's Connection, but there: without it each prompt waits for a delayed ACK.
      (client as unknown as { setNoDelay(on: boolean): void }).setNoDelay(true);
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        session.on('pty', (accept) => accept?.());
        session.on('exec', (accept, reject, info) => {
          if (!o.exec) return reject();
          const stream = accept();
          received.push(info.command);
          void Promise.resolve()
            .then(() => o.exec!(info.command))
            .then(
              (out) => stream.write(out),
              (err: unknown) => stream.stderr.write(`${String(err)}\n`),
            )
            .finally(() => {
              stream.exit(0);
              stream.end();
            });
        });
        session.on('shell', (accept, reject) => {
          if (!o.shell) return reject();
          const stream = accept();
          const onLine = o.shell({ write: (text) => stream.write(text), end: () => (stream.exit(0), stream.end()) });
          let buffer = '';
          let chain = Promise.resolve();
          stream.on('data', (d: Buffer) => {
            buffer += d.toString('utf8');
            let nl: number;
            while ((nl = buffer.search(/\r?\n|\r/)) >= 0) {
              const line = buffer.slice(0, nl);
              buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
              received.push(line);
              chain = chain.then(() => onLine(line)).catch(() => undefined);
            }
          });
        });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    hostKeySha256: sha256Fingerprint(hostPublic.getPublicSSH()),
    received,
    disconnectAll() {
      for (const c of clients) c.end();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const c of clients) c.end();
        server.close(() => resolve());
      }),
  };
}
