import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { defineEnforcer, parseConnections, SSH_OPTION_DEFAULTS, SshSession, sshOptionsShape, sshTarget } from '@rampart/plugin-kit';
import { createDenyListEnforcer } from './deny-list-adapter.ts';
import { COMMAND_BASES, type CommandBase } from './script.ts';

export { SecureXlError, denyListAdapter, createDenyListEnforcer } from './deny-list-adapter.ts';
export { COMMAND_BASES, failureOf, listSections, parseDenyList } from './script.ts';

const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}$/;

const SecureXlOptions = z
  .strictObject({
    ...sshOptionsShape,
    user: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,32}$/, { message: 'a Gaia user name (letters, digits, . _ -)' })
      .default('admin')
      .describe('SSH user whose shell is bash (Expert mode)'),
    member_host_keys: z
      .record(z.string().min(1).max(300), z.string().regex(FINGERPRINT, { message: 'SHA256:<base64> as ssh-keygen -lf prints it' }))
      .default({})
      .describe('Pinned host key of each cluster member, by its connections entry'),
    full_replace: z.enum(['load_file', 'flush_and_add']).default('load_file'),
    temp_dir: z
      .string()
      .regex(/^\/[A-Za-z0-9._/-]{0,200}$/, { message: 'an absolute path of letters, digits, . _ - and /' })
      .default('/var/tmp'),
    batch_size: z.number().int().min(1).max(5000).default(500).describe('Commands per SSH exec'),
    max_entries: z.number().int().min(1).max(5_000_000).default(100_000),
  })
  .default({
    ...SSH_OPTION_DEFAULTS,
    user: 'admin',
    member_host_keys: {},
    full_replace: 'load_file',
    temp_dir: '/var/tmp',
    batch_size: 500,
    max_entries: 100_000,
  });

/** `command` with blanks collapsed; empty means the current form, `fwaccel dos deny`. */
export function commandBase(command: string): CommandBase | undefined {
  const base = command.trim().replace(/\s+/g, ' ') || 'fwaccel dos deny';
  return (COMMAND_BASES as readonly string[]).includes(base) ? (base as CommandBase) : undefined;
}

/** The VSIDs of `vsids` (comma-separated), or a message naming the first bad one. */
export function parseVsids(text: string): string[] | string {
  const ids = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = ids.find((id) => !/^\d{1,5}$/.test(id));
  if (bad !== undefined) return `not a VSID (a number): '${bad}'`;
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  return dup === undefined ? ids : `VSID ${dup} is listed twice`;
}

function connectionsOf(text: string): { entry: string; address: { host: string; port?: number } }[] {
  const entries = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return parseConnections(text).map((address, i) => ({ entry: entries[i]!, address }));
}

export const SecureXlConfig = IpsEntries.firewall_accel_a.extend({ options: SecureXlOptions }).superRefine((cfg, ctx) => {
  if (!cfg.active) return;
  const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  let entries: string[] = [];
  try {
    entries = connectionsOf(cfg.connections).map((c) => c.entry);
    if (entries.length === 0) issue(['connections'], 'required when active: the gateway, or every cluster member, comma-separated');
  } catch (err) {
    issue(['connections'], (err as Error).message);
  }
  if (!cfg.password && !cfg.options.private_key_path) issue(['password'], 'a password or options.private_key_path is required');
  if (!commandBase(cfg.command)) issue(['command'], `one of: ${COMMAND_BASES.map((c) => `'${c}'`).join(', ')} (or empty for 'fwaccel dos deny')`);
  const vsids = parseVsids(cfg.vsids);
  if (typeof vsids === 'string') issue(['vsids'], vsids);
  for (const entry of entries) {
    if (!cfg.options.member_host_keys[entry] && !cfg.options.host_key_sha256) {
      issue(['options', 'member_host_keys'], `the host key of '${entry}' must be pinned (here, or options.host_key_sha256 for every member)`);
    }
  }
  for (const key of Object.keys(cfg.options.member_host_keys)) {
    if (!entries.includes(key)) issue(['options', 'member_host_keys', key], 'not an entry of connections');
  }
});
export type SecureXlConfig = z.infer<typeof SecureXlConfig>;

export const checkpointSecureXlEnforcer = defineEnforcer<SecureXlConfig>({
  name: 'checkpoint-securexl',
  serves: 'firewall_accel_a',
  configSchema: SecureXlConfig,
  async create(config, ctx) {
    const o = config.options;
    const members = await Promise.all(
      connectionsOf(config.connections).map(async ({ entry, address }) => {
        const target = await sshTarget(address, o.user, config.password, o);
        return { name: entry, shell: new SshSession({ ...target, hostKeySha256: o.member_host_keys[entry] ?? o.host_key_sha256 }) };
      }),
    );
    return createDenyListEnforcer({
      members,
      vsids: parseVsids(config.vsids) as string[],
      command: commandBase(config.command)!,
      fullReplace: o.full_replace,
      tempDir: o.temp_dir,
      batchSize: o.batch_size,
      capacity: o.max_entries,
      log: ctx.log.child({ enforcer: 'checkpoint-securexl', members: members.map((m) => m.name) }),
    });
  },
});
