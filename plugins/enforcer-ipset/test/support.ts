import { systemGate } from '@rampart/plugin-kit/testing';

export { silentLogger as silent } from '@rampart/plugin-kit/testing';

/** Skips locally (printing why) and fails under CI when ipset, iptables, nft, iproute2 or root are missing. */
export const skipWithoutIpset = (suite: string) => systemGate(suite, { commands: ['ipset', 'iptables', 'nft', 'ip'], root: true });
