import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';

export const IPSET_DEFAULTS = {
  backend: 'ipset' as const,
  set: 'rampart',
  capacity: 1_048_576,
  chains: ['INPUT', 'FORWARD', 'DOCKER-USER'],
  iptables: 'iptables' as const,
  batch_size: 10_000,
  netns: '',
  timeout_seconds: 120,
};

const chain = z.string().regex(/^[A-Za-z0-9_-]{1,28}$/, { message: 'an iptables chain name' });

export const IpsetOptions = z
  .strictObject({
    backend: z.literal('ipset').default('ipset').describe('packet_filter backend this plugin implements'),
    set: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,24}$/, { message: 'a set name: letters, digits, _ or -; at most 24' })
      .default(IPSET_DEFAULTS.set)
      .describe('Name of the hash:net set (a twin `<set>-new` is used for swaps)'),
    capacity: z.number().int().min(1).max(16_777_216).default(IPSET_DEFAULTS.capacity).describe('The set’s maxelem; lowest scores cut above it'),
    chains: z
      .array(chain)
      .min(1)
      .max(8)
      .default(IPSET_DEFAULTS.chains)
      .describe('filter-table chains that get the drop rule; a chain that does not exist (DOCKER-USER without Docker) is skipped'),
    iptables: z.enum(['iptables', 'iptables-nft', 'iptables-legacy']).default(IPSET_DEFAULTS.iptables),
    batch_size: z.number().int().min(1).max(100_000).default(IPSET_DEFAULTS.batch_size).describe('Entries per `ipset restore` of a diff'),
    netns: z
      .string()
      .regex(/^$|^[A-Za-z0-9_.-]{1,64}$/, { message: 'a network namespace name' })
      .default(IPSET_DEFAULTS.netns)
      .describe('Run ipset and iptables inside this named network namespace; empty = the agent’s own'),
    timeout_seconds: z.number().int().min(1).max(3600).default(IPSET_DEFAULTS.timeout_seconds),
  })
  .default(IPSET_DEFAULTS);

export const IpsetConfig = IpsEntries.packet_filter.extend({ options: IpsetOptions });
export type IpsetConfig = z.infer<typeof IpsetConfig>;
