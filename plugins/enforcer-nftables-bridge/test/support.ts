import type { PluginLogger } from '@rampart/plugin-kit';
import { systemGate } from '@rampart/plugin-kit/testing';

export const silent: PluginLogger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

/** Skips locally (printing why) and fails under CI when nft, iproute2 or root are missing. */
export const skipWithoutNft = (suite: string) => systemGate(suite, { commands: ['nft', 'ip'], root: true });
