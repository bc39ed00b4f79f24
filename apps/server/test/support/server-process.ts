import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** apps/server: where `npm start` and `npm run rampart` run. */
export const serverDir = fileURLToPath(new URL('../..', import.meta.url));

/** Environment without the test runner's DATABASE_URL: these processes use the embedded store. */
export function embeddedEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { DATABASE_URL: _ignored, ...rest } = process.env;
  return { ...rest, DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...extra };
}

export interface ServerProcess {
  child: ChildProcess;
  output(): string;
  /** The API base URL from the "control plane listening" line. */
  base: string;
  /** The demo organization's admin key printed on a first start. */
  demoKey: string | undefined;
}

/** Starts `src/main.ts` as its own process on a free port; resolves once it listens. */
export async function startServerProcess(dataDir: string, options: { expectDemo?: boolean; env?: Record<string, string>; startTimeoutMs?: number } = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: serverDir, env: embeddedEnv(dataDir, { PORT: '0', LOG_LEVEL: 'info', ...options.env }), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const deadline = Date.now() + (options.startTimeoutMs ?? 90_000);
  // The demo key is printed after the listening line; on a first start wait for both.
  while (!/control plane listening/.test(out) || (options.expectDemo && !/Authorization: rmp_/.test(out))) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}: ${out}`);
    if (Date.now() > deadline) throw new Error(`server did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const line = out.split('\n').find((l) => l.includes('control plane listening'))!;
  const base = (JSON.parse(line) as { url: string }).url;
  const demoKey = /Authorization: (rmp_[0-9a-f]{12}_[A-Za-z0-9_-]{43})/.exec(out)?.[1];
  return { child, output: () => out, base, demoKey };
}

/** Resolves with the exit code (or signal) once the process has exited. */
export function exited(child: ChildProcess): Promise<number | string | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
}
