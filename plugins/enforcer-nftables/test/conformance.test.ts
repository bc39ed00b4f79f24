import { describe } from 'vitest';
import { enforcerConformance, NetnsLab } from '@rampart/plugin-kit/testing';
import { nftablesEnforcer } from '../src/index.ts';
import { silent, skipWithoutNft } from './support.ts';

// The shared suite against the real nft, in a namespace of its own per test.
describe.skipIf(skipWithoutNft('nftables conformance'))('nftables enforcer against nft in a namespace', () => {
  enforcerConformance('nftables', async ({ capacity }) => {
    const lab = new NetnsLab();
    const ns = await lab.namespace('conf');
    const config = nftablesEnforcer.configSchema.parse({
      active: true,
      options: { netns: ns, batch_size: 400, ...(capacity ? { capacity } : {}) },
    });
    return {
      enforcer: await nftablesEnforcer.create(config, { log: silent }),
      reopen: () => nftablesEnforcer.create(config, { log: silent }),
      disturb: async () => void (await lab.exec(ns, ['nft', 'flush', 'ruleset'])),
      teardown: () => lab.destroy(),
    };
  });
});
