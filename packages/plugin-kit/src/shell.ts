import { spawn } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  input?: string;
  timeoutMs?: number;
  /** Aborted: the process (group) is killed and the call rejects with the signal's reason. */
  signal?: AbortSignal;
}

export type CommandRunner = (command: string, options?: RunOptions) => Promise<CommandResult>;

/** A configured command failed; carries the exit code and the end of its stderr. */
export class EnforcerCommandError extends Error {
  readonly code = 'ENFORCER_COMMAND_FAILED';
  constructor(
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`command exited with ${exitCode}: ${stderr.slice(-500).trim()}`);
    this.name = 'EnforcerCommandError';
  }
}

const MAX_OUTPUT = 1 << 20;

/**
 * Runs a command line with `/bin/sh -c`, the way operators write reload commands
 * (`nginx -t && nginx -s reload`). Output is bounded; a timeout kills the process group.
 */
export const runShell: CommandRunner = (command, options = {}) =>
  new Promise((resolve, reject) => {
    const { signal } = options;
    if (signal?.aborted) return reject(signal.reason);
    const child = spawn('/bin/sh', ['-c', command], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    const onAbort = () => {
      clearTimeout(timer);
      killGroup();
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      if (stdout.length < MAX_OUTPUT) stdout += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < MAX_OUTPUT) stderr += d.toString('utf8');
    });
    const timer = setTimeout(killGroup, options.timeoutMs ?? 60_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    child.on('close', (code, killedBy) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve({ code: code ?? (killedBy ? 128 : 1), stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
  });

/** Runs `command` and throws {@link EnforcerCommandError} unless it exits 0. */
export async function runChecked(run: CommandRunner, command: string, timeoutMs?: number, signal?: AbortSignal): Promise<CommandResult> {
  const result = await run(command, { timeoutMs, ...(signal ? { signal } : {}) });
  if (result.code !== 0) throw new EnforcerCommandError(result.code, result.stderr || result.stdout);
  return result;
}

/** Quotes one argument for `/bin/sh`. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_\/.,:=@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Whether `name` is an executable on PATH (or the sbin directories root's PATH usually has). */
export async function commandOnPath(name: string): Promise<boolean> {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean).concat('/usr/sbin', '/sbin', '/usr/local/sbin');
  for (const dir of dirs) {
    try {
      await access(join(dir, name), constants.X_OK);
      return true;
    } catch {
      /* next */
    }
  }
  return false;
}
