import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const serverDir = join(here, '..', 'apps', 'server');

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
