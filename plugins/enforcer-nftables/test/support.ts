import { systemGate } from '@rampart/plugin-kit/testing';

export { silentLogger as silent } from '@rampart/plugin-kit/testing';

/** Skips locally (printing why) and fails under CI when nft, iproute2 or root are missing. */
export const skipWithoutNft = (suite: string) => systemGate(suite, { commands: ['nft', 'ip'], root: true });
