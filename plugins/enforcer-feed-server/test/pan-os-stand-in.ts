import { startSshStandIn, type SshStandIn } from '@rampart/plugin-kit/testing';
import { httpsGet } from './helpers.ts';

/*
 * A PAN-OS firewall as far as this plugin meets it (a stand-in: a test, not a product): an SSH
 * CLI that takes `request system external-list refresh type ip name <edl>` and then pulls that
 * EDL from its configured source URL with basic auth and the pinned certificate, as the device
 * does, keeping the last good copy when the pull fails. Other input answers `Invalid syntax.`,
 * and an EDL name it does not know `Server error : ... is not a valid reference` (the phrasing
 * of PAN-OS's CLI for unknown objects; not taken from a real device).
 */

export interface EdlSource {
  port: number;
  ca: string;
  auth: string;
}

export interface PanOsStandIn extends SshStandIn {
  /** The list each EDL holds now (its last good copy), by EDL name. */
  edls: Map<string, string[]>;
  /** Pull failures, as the device's system log shows them. */
  failures: string[];
}

export async function startPanOsStandIn(user: string, password: string, source: () => EdlSource, known: readonly string[]): Promise<PanOsStandIn> {
  const edls = new Map<string, string[]>();
  const failures: string[] = [];
  const ssh = await startSshStandIn({
    user,
    password,
    async exec(command) {
      const m = /^request system external-list refresh type ip name (\S+)$/.exec(command.trim());
      if (!m) return 'Invalid syntax.\n';
      const name = m[1]!;
      if (!known.includes(name)) return `Server error : ${name} is not a valid reference\n`;
      const s = source();
      const got = await httpsGet(s.port, `/feeds/${name}.txt`, s.ca, s.auth).catch((err: Error) => ({ status: 0, body: err.message, etag: '' }));
      if (got.status === 200) edls.set(name, got.body.split('\n').filter(Boolean));
      else failures.push(`${name}: ${got.status}`);
      return '';
    },
  });
  return Object.assign(ssh, { edls, failures });
}
