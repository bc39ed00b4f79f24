import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface SystemRequirements {
  /** Executables that must be on PATH (or absolute paths that must be executable). */
  commands?: string[];
  /** Needs uid 0 (network namespaces, packet filters). */
  root?: boolean;
}

function onPath(command: string): boolean {
  const candidates = command.includes('/')
    ? [command]
    : (process.env.PATH ?? '').split(delimiter).concat('/usr/sbin', '/sbin').map((dir) => join(dir, command));
  return candidates.some((file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Why a system-dependent test cannot run here, or undefined when it can. */
export function missingSystem(requirements: SystemRequirements): string | undefined {
  const reasons: string[] = [];
  if (requirements.root && process.getuid?.() !== 0) reasons.push('not running as root');
  const missing = (requirements.commands ?? []).filter((command) => !onPath(command));
  if (missing.length > 0) reasons.push(`missing ${missing.join(', ')}`);
  return reasons.length > 0 ? reasons.join('; ') : undefined;
}

/**
 * The rule for tests against real system tools (conventions §11): locally, a missing tool skips
 * the suite with the reason printed; under CI (`process.env.CI`), where `.ci/run` installs every
 * tool, it throws so the test file fails instead of skipping silently.
 * Usage: `describe.skipIf(systemGate('nftables namespace', { commands: ['nft'], root: true }))(...)`.
 */
export function systemGate(suite: string, requirements: SystemRequirements): boolean {
  const reason = missingSystem(requirements);
  if (!reason) return false;
  if (process.env.CI) throw new Error(`${suite}: cannot run under CI: ${reason}`);
  console.warn(`[skip] ${suite}: ${reason}`);
  return true;
}
