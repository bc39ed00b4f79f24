import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Vitest global setup: the server bundle (apps/server/dist: the server, the `rampart` CLI the
 * CLI tests spawn through bin/rampart.js, the console, the store template) is built once before
 * any test runs, instead of inside the first test that spawns the CLI (and its deadline). A no-op
 * in a few ms when no input changed since the last build.
 */
export default function setup(): void {
  execFileSync(process.execPath, [fileURLToPath(new URL('../apps/server/scripts/build.mjs', import.meta.url))], { stdio: 'inherit' });
}
