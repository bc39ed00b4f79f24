import { createNftSetEnforcer, defineEnforcer } from '@rampart/plugin-kit';
import { BridgeConfig } from './config.ts';

export { BridgeConfig, BridgeOptions, BRIDGE_DEFAULTS } from './config.ts';

/**
 * `ips.bridge_filter`: the nftables `bridge` family, for a host that bridges traffic (a
 * transparent filter in front of servers, a hypervisor's bridge). Same engine as the host packet
 * filter; the spec entry has no file or command, so nothing is persisted or reloaded.
 */
export const nftablesBridgeEnforcer = defineEnforcer<BridgeConfig>({
  name: 'nftables-bridge',
  serves: 'bridge_filter',
  configSchema: BridgeConfig,
  create: async (config, ctx) => {
    const o = config.options;
    return createNftSetEnforcer(
      {
        name: 'nftables-bridge',
        family: 'bridge',
        table: o.table,
        hooks: o.hooks,
        priority: o.priority,
        capacity: o.capacity,
        batchSize: o.batch_size,
        netns: o.netns,
        timeoutSeconds: o.timeout_seconds,
        acl: '',
        reloadCommand: '',
      },
      ctx,
    );
  },
});
