import { describe } from 'vitest';
import { enforcerConformance, NetnsLab } from '@rampart/plugin-kit/testing';
import { ipsetEnforcer } from '../src/index.ts';
import { silent, skipWithoutIpset } from './support.ts';

// The shared suite against the real ipset, in a namespace of its own per test.
describe.skipIf(skipWithoutIpset('ipset conformance'))('ipset enforcer against ipset and iptables in a namespace', () => {
  enforcerConformance('ipset', async ({ capacity }) => {
    const lab = new NetnsLab();
    const ns = await lab.namespace('conf');
    const config = ipsetEnforcer.configSchema.parse({
      active: true,
      options: { netns: ns, batch_size: 400, ...(capacity ? { capacity } : {}) },
    });
    return {
      enforcer: await ipsetEnforcer.create(config, { log: silent }),
      reopen: () => ipsetEnforcer.create(config, { log: silent }),
      disturb: async () => void (await lab.exec(ns, ['nft', 'flush', 'ruleset'])),
      teardown: () => lab.destroy(),
    };
  });
});
