import { defineEnforcer } from '@rampart/plugin-kit';
import { IpsetConfig } from './config.ts';
import { createIpsetEnforcer } from './enforcer.ts';

export { IpsetConfig, IpsetOptions, IPSET_DEFAULTS } from './config.ts';
export { fullReplaceScript, diffBatches, hashsizeFor, saveScript, parseSave } from './script.ts';

/** `ips.packet_filter` with `options.backend = "ipset"` (iptables + ipset). */
export const ipsetEnforcer = defineEnforcer<IpsetConfig>({
  name: 'ipset',
  serves: 'packet_filter',
  configSchema: IpsetConfig,
  create: async (config, ctx) => createIpsetEnforcer(config, ctx),
});
