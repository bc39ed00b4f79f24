import { z } from 'zod';

/** Beyond the specification: the figures of the web console's overview page (`GET /overview`). */
export const OverviewResponse = z
  .object({
    at: z.int().describe('Epoch seconds the figures were computed at'),
    ipv4: z.object({
      total: z.int().min(0).describe('IPv4 indicators held'),
      histogram: z
        .array(z.int().min(0))
        .length(1001)
        .describe('histogram[s] = indicators whose live score now, rounded down, is s (0..1000)'),
    }),
    reports_24h: z.int().min(0).describe("IPv4 addresses and networks the caller's organization reported in the last 24 hours, each counted once however often it was reported"),
    coins: z.object({ credit_tokens: z.number(), debit_tokens: z.number(), balance: z.number() }),
  })
  .meta({ description: 'Figures for the overview page' });
export type OverviewResponse = z.infer<typeof OverviewResponse>;
