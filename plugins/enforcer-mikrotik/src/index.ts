import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { defineEnforcer, SSH_OPTION_DEFAULTS, SshSession, sshOptionsShape, sshTarget } from '@rampart/plugin-kit';
import { createAddressListEnforcer } from './address-list-enforcer.ts';

export { RouterOsError } from './address-list-enforcer.ts';
export { SshError, sha256Fingerprint } from '@rampart/plugin-kit';
export { parseAddressList, parseDropRules, ros, terseFields } from './routeros.ts';

const MikrotikOptions = z
  .strictObject({
    ...sshOptionsShape,
    dialect: z.literal('routeros').default('routeros').describe('router_a dialect this plugin implements'),
    list_name: z
      .string()
      .regex(/^[A-Za-z0-9_]{1,40}$/, { message: 'letters, digits and _ (at most 40)' })
      .default('rampart'),
    chains: z.array(z.enum(['input', 'forward'])).min(1).max(2).default(['input', 'forward']),
    batch_size: z.number().int().min(1).max(5000).default(500).describe('Commands per SSH exec'),
    max_entries: z.number().int().min(1).max(1_000_000).default(100_000),
  })
  .default({
    ...SSH_OPTION_DEFAULTS,
    dialect: 'routeros',
    list_name: 'rampart',
    chains: ['input', 'forward'],
    batch_size: 500,
    max_entries: 100_000,
  });

export const MikrotikConfig = IpsEntries.router_a.extend({ options: MikrotikOptions }).superRefine((cfg, ctx) => {
  if (!cfg.active) return;
  const need = (ok: unknown, path: (string | number)[], message: string) => ok || ctx.addIssue({ code: 'custom', path, message });
  need(cfg.router_host, ['router_host'], 'required when active');
  need(cfg.router_user, ['router_user'], 'required when active');
  need(cfg.router_password || cfg.options.private_key_path, ['router_password'], 'a password or options.private_key_path is required');
  need(cfg.options.host_key_sha256, ['options', 'host_key_sha256'], "the router's host key must be pinned");
});
export type MikrotikConfig = z.infer<typeof MikrotikConfig>;

export const mikrotikEnforcer = defineEnforcer<MikrotikConfig>({
  name: 'mikrotik',
  serves: 'router_a',
  configSchema: MikrotikConfig,
  async create(config, ctx) {
    const o = config.options;
    const shell = new SshSession(await sshTarget({ host: config.router_host }, config.router_user, config.router_password, o));
    return createAddressListEnforcer({
      listName: o.list_name,
      chains: o.chains,
      batchSize: o.batch_size,
      capacity: o.max_entries,
      shell,
      log: ctx.log.child({ enforcer: 'mikrotik', router: config.router_host }),
    });
  },
});
