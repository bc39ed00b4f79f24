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

/** Most days `GET /overview/history` answers: the rollups keep 31 (the current day is partial). */
export const HISTORY_MAX_DAYS = 30;

export const OverviewHistoryQuery = z
  .strictObject({
    days: z.coerce
      .number()
      .int()
      .min(1)
      .max(HISTORY_MAX_DAYS)
      .default(HISTORY_MAX_DAYS)
      .describe(`Days back from now, 1 to ${HISTORY_MAX_DAYS}: the hour series start ${'`days`'} x 24 hours before the current hour`),
  })
  .meta({ description: 'How far back the history goes' });
export type OverviewHistoryQuery = z.infer<typeof OverviewHistoryQuery>;

const Hour = z.int().min(0).describe('Start of the UTC hour, epoch seconds');
const Day = z.int().min(0).describe('Start of the UTC day, epoch seconds');

/** Beyond the specification: the console's figures over time (`GET /overview/history`), read from stored rollups. */
export const OverviewHistoryResponse = z
  .object({
    at: z.int().describe('Epoch seconds the answer was made at'),
    days: z.int().min(1).max(HISTORY_MAX_DAYS),
    reports_per_hour: z
      .array(z.object({ hour: Hour, organization: z.int().min(0), alliance: z.int().min(0) }))
      .describe(
        'Every hour from days x 24 hours before the current one to the current one (partial), oldest first: reports received from the caller organization (organization) and from every member together (alliance); each report counted once, IPv4, file, domain and URL alike',
      ),
    agents_alive_per_hour: z
      .array(z.object({ hour: Hour, alive: z.int().min(0), active: z.int().min(0) }))
      .describe(
        "The same hours: the most agents of the organization alive at once (checked in within 2 x sync_time minutes) and active (not deactivated) in that hour, sampled each minute; 0 when no sample was taken (no active agent, or no server running)",
      ),
    coins_spent_per_day: z
      .array(z.object({ day: Day, coins: z.int().min(0) }))
      .describe('Every UTC day of the range, oldest first: coins the organization was charged (refunded charges not counted)'),
    indicators_per_band: z
      .array(
        z.object({
          day: Day,
          at: z.int().min(0).describe('When the snapshot was taken, epoch seconds'),
          low: z.int().min(0),
          medium: z.int().min(0),
          high: z.int().min(0),
          critical: z.int().min(0),
        }),
      )
      .describe("Days with a snapshot only, oldest first: the IPv4 indicators the organization saw by live score in its own bands (live.*_score), at the day's latest snapshot (taken every 15 minutes)"),
  })
  .meta({ description: 'Figures over time for the overview page' });
export type OverviewHistoryResponse = z.infer<typeof OverviewHistoryResponse>;
