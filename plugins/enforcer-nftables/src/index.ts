import { defineEnforcer } from '@rampart/plugin-kit';
import { NftablesConfig } from './config.ts';
import { createNftablesEnforcer } from './enforcer.ts';

export { NftablesConfig, NftablesOptions, NFT_DEFAULTS } from './config.ts';

/** `ips.packet_filter` with `options.backend = "nftables"`. */
export const nftablesEnforcer = defineEnforcer<NftablesConfig>({
  name: 'nftables',
  serves: 'packet_filter',
  configSchema: NftablesConfig,
  create: async (config, ctx) => createNftablesEnforcer(config, ctx),
});
