import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { serverPath } from '../paths.ts';

const PACKAGE_JSON = serverPath('package.json');

/**
 * The build date reported by `/version`: BUILD_DATE when the packager set it, else the date
 * of the checked-out commit, else the date the package was installed.
 */
export function buildDate(env: Record<string, string | undefined> = process.env): string {
  if (env.BUILD_DATE && /^\d{4}-\d{2}-\d{2}/.test(env.BUILD_DATE)) return env.BUILD_DATE.slice(0, 10);
  try {
    const out = execFileSync('git', ['log', '-1', '--format=%cs'], { cwd: serverPath(), stdio: ['ignore', 'pipe', 'ignore'], timeout: 2000 });
    const date = out.toString().trim();
    if (/^\d{4}-\d{2}-\d{2}$/.test(date)) return date;
  } catch {
    // not a git checkout: fall through
  }
  return statSync(PACKAGE_JSON).mtime.toISOString().slice(0, 10);
}
