import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const serverDir = join(here, '..', 'apps', 'server');

/**
 * Node flags and environment production runs the server's bundle with (apps/server/runtime.json:
 * npm start, the Dockerfile, the systemd unit): every bench that measures the server as it runs
 * starts it with these.
 */
export const SERVER_RUNTIME = JSON.parse(readFileSync(join(serverDir, 'runtime.json'), 'utf8')) as { nodeArgs: string[]; env: Record<string, string> };

/** Builds the control plane bundle (dist/embed.mjs, as `npm start` runs it); a fraction of a second. */
export function buildServerBundle(): void {
  execFileSync(process.execPath, [join(serverDir, 'scripts', 'build.mjs')], { stdio: 'inherit' });
}

/**
 * The control plane as production runs it (the esbuild bundle, not the sources through tsx), so
 * the server's memory and speed in a benchmark are those of `npm start`.
 */
export async function serverBundle(): Promise<typeof import('../apps/server/src/embed.ts')> {
  return (await import(pathToFileURL(join(serverDir, 'dist', 'embed.mjs')).href)) as typeof import('../apps/server/src/embed.ts');
}
