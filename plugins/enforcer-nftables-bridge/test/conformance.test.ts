import { describe } from 'vitest';
import { enforcerConformance, NetnsLab } from '@rampart/plugin-kit/testing';
import { nftablesBridgeEnforcer } from '../src/index.ts';
import { silent, skipWithoutNft } from './support.ts';

// The shared suite against the real nft bridge family, in a namespace of its own per test.
describe.skipIf(skipWithoutNft('nftables bridge conformance'))('nftables bridge enforcer against nft in a namespace', () => {
  enforcerConformance('nftables-bridge', async ({ capacity }) => {
    const lab = new NetnsLab();
    const ns = await lab.namespace('conf');
    const config = nftablesBridgeEnforcer.configSchema.parse({
      active: true,
      options: { netns: ns, batch_size: 400, ...(capacity ? { capacity } : {}) },
    });
    return {
      enforcer: await nftablesBridgeEnforcer.create(config, { log: silent }),
      reopen: () => nftablesBridgeEnforcer.create(config, { log: silent }),
      disturb: async () => void (await lab.exec(ns, ['nft', 'flush', 'ruleset'])),
      teardown: () => lab.destroy(),
    };
  });
});
