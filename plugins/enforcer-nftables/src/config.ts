import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';

/** nft identifiers: what `nft` accepts unquoted as a table name. */
const identifier = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_]{0,30}$/, { message: 'a name: a letter, then letters, digits or _; at most 31' });

export const NFT_DEFAULTS = {
  backend: 'nftables' as const,
  table: 'rampart',
  priority: -10,
  capacity: 1_000_000,
  batch_size: 10_000,
  netns: '',
  timeout_seconds: 120,
};

export const NftablesOptions = z
  .strictObject({
    backend: z.literal('nftables').default('nftables').describe('packet_filter backend this plugin implements'),
    table: identifier.default(NFT_DEFAULTS.table).describe('The `inet` table this enforcer owns (created and deleted whole)'),
    priority: z
      .number()
      .int()
      .min(-400)
      .max(400)
      .default(NFT_DEFAULTS.priority)
      .describe('Hook priority of the input and forward chains; below 0 runs before the usual filter tables'),
    capacity: z.number().int().min(1).max(10_000_000).default(NFT_DEFAULTS.capacity).describe('Most entries enforced; lowest scores cut'),
    batch_size: z.number().int().min(1).max(100_000).default(NFT_DEFAULTS.batch_size).describe('Elements per incremental transaction'),
    netns: z
      .string()
      .regex(/^$|^[A-Za-z0-9_.-]{1,64}$/, { message: 'a network namespace name' })
      .default(NFT_DEFAULTS.netns)
      .describe('Run nft inside this named network namespace (`ip netns exec`); empty = the agent’s own'),
    timeout_seconds: z.number().int().min(1).max(3600).default(NFT_DEFAULTS.timeout_seconds),
  })
  .default(NFT_DEFAULTS);

export const NftablesConfig = IpsEntries.packet_filter.extend({ options: NftablesOptions });
export type NftablesConfig = z.infer<typeof NftablesConfig>;
export type NftablesOptions = NftablesConfig['options'];
