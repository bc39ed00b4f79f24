import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { createEngineEnforcer, defineEnforcer, parseConnections, SSH_OPTION_DEFAULTS, SshSession, sshOptionsShape, sshTarget } from '@rampart/plugin-kit';
import { objectGroupAdapter, standardAclAdapter, type CliShell } from './ios-adapter.ts';
import { IP_PLACEHOLDER, shunAdapter, shunnable } from './asa-adapter.ts';

export { IosError, LAST_SEQUENCE, objectGroupAdapter, standardAclAdapter, type CliShell } from './ios-adapter.ts';
export { ASA_ERROR, parseShuns, shunAdapter } from './asa-adapter.ts';
export * from './ios-cli.ts';

/**
 * The device's CLI through `session`: a login that lands in user EXEC (`>`) is raised with
 * `enable` and the account's password (an SSH key login has none, and is refused there).
 */
function cli(session: SshSession, password: string): CliShell {
  return {
    interact: (lines, o, signal) => session.interact(lines, { ...o, ...(password ? { enablePassword: password } : {}) }, signal),
    close: () => session.close(),
  };
}

type Need = (ok: unknown, path: (string | number)[], message: string) => void;
const needs = (ctx: z.RefinementCtx): Need => (ok, path, message) => void (ok || ctx.addIssue({ code: 'custom', path, message }));

/** IOS object-group names and named ACLs: what IOS takes without quoting. */
const iosName = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,40}$/, { message: 'a letter, then letters, digits, _ and - (at most 41)' });

const IosOptions = z
  .strictObject({
    ...sshOptionsShape,
    dialect: z.literal('ios').default('ios').describe('router_a dialect this plugin implements'),
    mode: z.enum(['object-group', 'standard']).default('object-group'),
    group_name: iosName.default('RAMPART').describe('Base name of the two object groups (<name>-a, <name>-b)'),
    acl: iosName.default('RAMPART-IN').describe('Extended ACL holding the deny entry (object-group mode)'),
    acl_sequence: z.number().int().min(1).max(2147483646).default(10).describe('Sequence number of the deny entry (and the next one)'),
    standard_acl: z
      .number()
      .int()
      .refine((n) => (n >= 1 && n <= 99) || (n >= 1300 && n <= 1999), { message: 'a standard ACL number: 1-99 or 1300-1999' })
      .default(10),
    standard_permit_any: z.boolean().default(true).describe('Keep `permit any` last in the standard ACL'),
    write_memory: z.boolean().default(false).describe('`write memory` after every change'),
    max_entries: z.number().int().min(1).max(100_000).default(5000),
  })
  .default({
    ...SSH_OPTION_DEFAULTS,
    dialect: 'ios',
    mode: 'object-group',
    group_name: 'RAMPART',
    acl: 'RAMPART-IN',
    acl_sequence: 10,
    standard_acl: 10,
    standard_permit_any: true,
    write_memory: false,
    max_entries: 5000,
  });

export const CiscoIosConfig = IpsEntries.router_a.extend({ options: IosOptions }).superRefine((cfg, ctx) => {
  if (!cfg.active) return;
  const need = needs(ctx);
  need(cfg.router_host, ['router_host'], 'required when active');
  need(cfg.router_user, ['router_user'], 'required when active');
  need(cfg.router_password || cfg.options.private_key_path, ['router_password'], 'a password or options.private_key_path is required');
  need(cfg.options.host_key_sha256, ['options', 'host_key_sha256'], "the router's host key must be pinned");
});
export type CiscoIosConfig = z.infer<typeof CiscoIosConfig>;

/** `ips.router_a` with `options.dialect = "ios"`: Cisco IOS / IOS-XE over SSH. */
export const ciscoIosEnforcer = defineEnforcer<CiscoIosConfig>({
  name: 'cisco-ios',
  serves: 'router_a',
  configSchema: CiscoIosConfig,
  async create(config, ctx) {
    const o = config.options;
    const shell = cli(new SshSession(await sshTarget({ host: config.router_host }, config.router_user, config.router_password, o)), config.router_password);
    const adapter =
      o.mode === 'standard'
        ? standardAclAdapter({ acl: o.standard_acl, permitAny: o.standard_permit_any, writeMemory: o.write_memory, shell })
        : objectGroupAdapter({ groupName: o.group_name, acl: o.acl, sequence: o.acl_sequence, writeMemory: o.write_memory, shell });
    return createEngineEnforcer(adapter, { capacity: o.max_entries, log: ctx.log.child({ enforcer: 'cisco-ios', router: config.router_host, mode: o.mode }) });
  },
});

const AsaOptions = z
  .strictObject({ ...sshOptionsShape, max_entries: z.number().int().min(1).max(10_000).default(200) })
  .default({ ...SSH_OPTION_DEFAULTS, max_entries: 200 });

function addressIssue(address: string): string | undefined {
  try {
    const parsed = parseConnections(address);
    return parsed.length === 1 ? undefined : 'one host or host:port';
  } catch (err) {
    return (err as Error).message;
  }
}

/** Why a command template is unusable, or undefined. Empty means `shun {ip}`. */
export function commandIssue(command: string): string | undefined {
  if (command === '') return undefined;
  if (!command.startsWith('shun ')) return 'starts with "shun " (e.g. "shun {ip}" or "shun {ip} interface outside")';
  if (command.split(IP_PLACEHOLDER).length !== 2) return `holds ${IP_PLACEHOLDER} exactly once`;
  if (/[\r\n{}]/.test(command.replace(IP_PLACEHOLDER, ''))) return `one line, no braces besides ${IP_PLACEHOLDER}`;
  return undefined;
}

export const CiscoAsaConfig = IpsEntries.firewall_c.extend({ options: AsaOptions }).superRefine((cfg, ctx) => {
  const need = needs(ctx);
  const bad = commandIssue(cfg.command);
  need(!bad, ['command'], `the shun command template ${bad}`);
  if (!cfg.active) return;
  need(cfg.address, ['address'], 'required when active');
  const badAddress = cfg.address ? addressIssue(cfg.address) : undefined;
  need(!badAddress, ['address'], `${badAddress}`);
  need(cfg.user, ['user'], 'required when active');
  need(cfg.password || cfg.options.private_key_path, ['password'], 'a password or options.private_key_path is required');
  need(cfg.options.host_key_sha256, ['options', 'host_key_sha256'], "the firewall's host key must be pinned");
});
export type CiscoAsaConfig = z.infer<typeof CiscoAsaConfig>;

/** `ips.firewall_c`: Cisco ASA shuns over SSH. */
export const ciscoAsaEnforcer = defineEnforcer<CiscoAsaConfig>({
  name: 'cisco-asa',
  serves: 'firewall_c',
  configSchema: CiscoAsaConfig,
  async create(config, ctx) {
    const o = config.options;
    const [address] = parseConnections(config.address);
    const shell = cli(new SshSession(await sshTarget(address!, config.user, config.password, o)), config.password);
    const adapter = shunAdapter({ command: config.command || `shun ${IP_PLACEHOLDER}`, shell });
    return createEngineEnforcer(adapter, {
      capacity: o.max_entries,
      // A network cannot be shunned: refused, counted as invalid and logged by the engine.
      accepts: shunnable,
      log: ctx.log.child({ enforcer: 'cisco-asa', firewall: address!.host }),
    });
  },
});
