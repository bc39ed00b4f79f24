import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';

export const BRIDGE_DEFAULTS = {
  table: 'rampart',
  hooks: ['forward', 'input'] as ('prerouting' | 'input' | 'forward')[],
  priority: -10,
  capacity: 1_000_000,
  batch_size: 10_000,
  netns: '',
  timeout_seconds: 120,
};

export const BridgeOptions = z
  .strictObject({
    table: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_]{0,30}$/, { message: 'a name: a letter, then letters, digits or _; at most 31' })
      .default(BRIDGE_DEFAULTS.table)
      .describe('The `bridge` table this enforcer owns (created and deleted whole)'),
    hooks: z
      .array(z.enum(['prerouting', 'input', 'forward']))
      .min(1)
      .max(3)
      .refine((hooks) => new Set(hooks).size === hooks.length, { message: 'each hook once' })
      .default(BRIDGE_DEFAULTS.hooks)
      .describe('Bridge hooks that drop listed sources: forward = frames crossing the bridge, input = frames for the host'),
    priority: z.number().int().min(-400).max(400).default(BRIDGE_DEFAULTS.priority),
    capacity: z.number().int().min(1).max(10_000_000).default(BRIDGE_DEFAULTS.capacity).describe('Most entries enforced; lowest scores cut'),
    batch_size: z.number().int().min(1).max(100_000).default(BRIDGE_DEFAULTS.batch_size),
    netns: z
      .string()
      .regex(/^$|^[A-Za-z0-9_.-]{1,64}$/, { message: 'a network namespace name' })
      .default(BRIDGE_DEFAULTS.netns)
      .describe('Run nft inside this named network namespace; empty = the agent’s own'),
    timeout_seconds: z.number().int().min(1).max(3600).default(BRIDGE_DEFAULTS.timeout_seconds),
  })
  .default(BRIDGE_DEFAULTS);

export const BridgeConfig = IpsEntries.bridge_filter.extend({ options: BridgeOptions });
export type BridgeConfig = z.infer<typeof BridgeConfig>;
