import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/**
 * A path inside the server package (apps/server), found from wherever this module runs: its
 * TypeScript source under src/ or the bundle under dist/ (`npm start`). Files the server reads
 * at run time (migrations, resources) are named relative to that root, never to this module.
 */
export function serverPath(...parts: string[]): string {
  if (!root) {
    let dir = dirname(fileURLToPath(import.meta.url));
    for (;;) {
      const pkg = join(dir, 'package.json');
      if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === '@rampart/server') break;
      const up = dirname(dir);
      if (up === dir) throw new Error(`the @rampart/server package was not found above ${fileURLToPath(import.meta.url)}`);
      dir = up;
    }
    root = dir;
  }
  return join(root, ...parts);
}
