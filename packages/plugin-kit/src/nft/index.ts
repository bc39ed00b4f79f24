// The engine shared by the nftables enforcers (host `inet` table, `bridge` table).
export { createNftSetEnforcer, type NftSetEnforcerOptions } from './set-enforcer.ts';
export { ADDR_SET, NET_SET, elementBatches, fullReplaceScript, outermostNets, withdrawScript, type NftLayout, type SetChange } from './script.ts';
export { parseTable, type TableState } from './read-back.ts';
