import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The shared folder (oracles, bench inputs) sits beside the checkout: `../shared` from the
// repository root. RAMPART_SHARED_DIR names it where a clone is laid out otherwise.
const BESIDE_CHECKOUT = fileURLToPath(new URL('../../../../../shared/', import.meta.url));

/** The path of `relative` inside the shared folder (which may not exist). */
export function sharedPath(relative: string): string {
  return join(process.env.RAMPART_SHARED_DIR ?? BESIDE_CHECKOUT, relative);
}

/**
 * The gate for tests that read the shared folder, with the rule of `systemGate`: locally, when
 * `relative` is missing the suite skips with a message naming what is missing; under CI it throws.
 * Usage: `describe.skipIf(sharedGate('sshd oracle', 'oracles/fail2ban/sshd'))(...)`.
 */
export function sharedGate(suite: string, relative: string): boolean {
  const path = sharedPath(relative);
  if (existsSync(path)) return false;
  const reason = `${path} is missing (the shared folder beside the checkout, or RAMPART_SHARED_DIR)`;
  if (process.env.CI) throw new Error(`${suite}: cannot run under CI: ${reason}`);
  console.warn(`[skip] ${suite}: ${reason}`);
  return true;
}
