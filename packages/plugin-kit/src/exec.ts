import { spawn } from 'node:child_process';
import { EnforcerCommandError, type CommandResult, type RunOptions } from './shell.ts';

const MAX_OUTPUT = 64 << 20;

/**
 * Runs a program with an argument vector (no shell, so nothing in a CIDR or a table name is ever
 * interpreted), feeding `input` on stdin. Output is bounded; a timeout kills the process.
 * Resolves with the exit code; `runArgvChecked` throws on a non-zero one. An aborted `signal`
 * kills the process and rejects with the signal's reason.
 */
export function runArgv(argv: readonly string[], options: RunOptions = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const [file, ...args] = argv;
    if (!file) return reject(new Error('empty command'));
    const { signal } = options;
    if (signal?.aborted) return reject(signal.reason);
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    // Aborted: the process is killed and the call rejects with the signal's reason at once.
    const onAbort = () => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    child.stdout.on('data', (d: Buffer) => {
      if ((outBytes += d.length) <= MAX_OUTPUT) out.push(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      if (err.length < 256) err.push(d);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(e);
    });
    child.on('close', (code, killedBy) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve({
        code: code ?? (killedBy ? 128 : 1),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
  });
}

export async function runArgvChecked(argv: readonly string[], options: RunOptions = {}): Promise<CommandResult> {
  const result = await runArgv(argv, options);
  if (result.code !== 0) throw new EnforcerCommandError(result.code, result.stderr || result.stdout);
  return result;
}
