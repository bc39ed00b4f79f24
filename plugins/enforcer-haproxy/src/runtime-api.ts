import { connect, type Socket } from 'node:net';

/** Where the HAProxy stats socket listens: a UNIX socket path, or `host:port` for TCP. */
export function socketTarget(address: string): { path: string } | { host: string; port: number } {
  const tcp = /^([^/:]+):(\d{1,5})$/.exec(address);
  return tcp ? { host: tcp[1]!, port: Number(tcp[2]) } : { path: address };
}

export class HaproxyRuntimeError extends Error {
  readonly code = 'HAPROXY_RUNTIME_FAILED';
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
    this.name = 'HaproxyRuntimeError';
  }
}

/**
 * Sends `commands` over one connection in interactive mode (`prompt`) and returns one response
 * per command. In that mode HAProxy answers each line, then prints the `> ` prompt, so the
 * output splits on prompts; the first part answers `prompt` itself.
 */
export function runtimeCommands(address: string, commands: string[], timeoutMs = 30_000, signal?: AbortSignal): Promise<string[]> {
  for (const c of commands) if (/[\r\n;]/.test(c)) throw new HaproxyRuntimeError('a runtime command may not contain a newline or ";"', c);
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const socket: Socket = connect(socketTarget(address) as never);
    // Aborted: the connection is dropped and the call rejects with the signal's reason.
    const onAbort = () => socket.destroy(signal!.reason instanceof Error ? signal!.reason : new Error(String(signal!.reason)));
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('close', () => signal?.removeEventListener('abort', onAbort));
    const chunks: Buffer[] = [];
    socket.setTimeout(timeoutMs, () => socket.destroy(new HaproxyRuntimeError(`no answer from ${address} within ${timeoutMs} ms`)));
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (err) => reject(err));
    socket.on('close', (hadError) => {
      if (hadError) return;
      const parts = Buffer.concat(chunks).toString('utf8').split(/(?:^|\n)> /);
      const answers = parts.slice(1, 1 + commands.length).map((p) => p.trim());
      if (answers.length !== commands.length) {
        reject(new HaproxyRuntimeError(`expected ${commands.length} answers from ${address}, got ${answers.length}`));
      } else resolve(answers);
    });
    // No half-close: HAProxy may drop lines still buffered once it sees our end of stream;
    // `quit` makes it close the connection after the last answer.
    socket.write(`prompt\n${commands.join('\n')}${commands.length ? '\n' : ''}quit\n`);
  });
}

/** Runs commands that answer nothing on success (add/del/commit); throws on the first answer. */
export async function runtimeSilent(address: string, commands: string[], timeoutMs?: number, signal?: AbortSignal): Promise<void> {
  const answers = await runtimeCommands(address, commands, timeoutMs, signal);
  const failed = answers.findIndex((a) => a !== '');
  if (failed >= 0) throw new HaproxyRuntimeError(`HAProxy refused a command: ${answers[failed]!.slice(0, 300)}`, commands[failed]);
}
