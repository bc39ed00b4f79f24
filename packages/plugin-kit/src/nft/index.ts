// The adapter shared by the nftables enforcers (host `inet` table, `bridge` table).
export { createNftSetEnforcer, nftSetAdapter, type NftSetEnforcerOptions } from './adapter.ts';
export { ADDR_SET, NET_SET, elementBatches, fullReplaceScript, outermostNets, withdrawScript, type NftLayout, type SetChange } from './script.ts';
export { parseTable, type TableState } from './read-back.ts';
