import { createNftSetEnforcer, type Enforcer, type EnforcerContext } from '@rampart/plugin-kit';
import type { NftablesConfig } from './config.ts';

/** The host's packet filter: `table inet <table>` with drop chains on input and forward. */
export function createNftablesEnforcer(config: NftablesConfig, ctx: EnforcerContext): Enforcer {
  const o = config.options;
  return createNftSetEnforcer(
    {
      name: 'nftables',
      family: 'inet',
      table: o.table,
      hooks: ['input', 'forward'],
      priority: o.priority,
      capacity: o.capacity,
      batchSize: o.batch_size,
      netns: o.netns,
      timeoutSeconds: o.timeout_seconds,
      acl: config.acl,
      reloadCommand: config.reload_command,
    },
    ctx,
  );
}
