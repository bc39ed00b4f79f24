import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { HISTORY_MAX_DAYS, OverviewHistoryQuery, OverviewHistoryResponse } from './overview.ts';

const paths = (r: { success: boolean; error?: z.ZodError }) => (r.error ? r.error.issues.map((i) => i.path.join('.')) : []);

describe('overview history contracts', () => {
  it('default to the 30 days kept and bound the range', () => {
    expect(OverviewHistoryQuery.parse({})).toEqual({ days: HISTORY_MAX_DAYS });
    expect(OverviewHistoryQuery.parse({ days: '1' })).toEqual({ days: 1 });
    for (const days of ['0', '31', '1.5', 'all', '-3']) expect(paths(OverviewHistoryQuery.safeParse({ days })), days).toEqual(['days']);
    expect(OverviewHistoryQuery.safeParse({ since: '0' }).success).toBe(false);
  });

  it('hold non-negative whole counts per hour and day', () => {
    const valid = {
      at: 1_795_737_600,
      days: 1,
      reports_per_hour: [{ hour: 1_795_734_000, organization: 2, alliance: 5 }],
      agents_alive_per_hour: [{ hour: 1_795_734_000, alive: 1, active: 2 }],
      coins_spent_per_day: [{ day: 1_795_651_200, coins: 10 }],
      indicators_per_band: [{ day: 1_795_651_200, at: 1_795_737_000, low: 1, medium: 0, high: 3, critical: 2 }],
    };
    expect(OverviewHistoryResponse.parse(valid)).toEqual(valid);
    expect(paths(OverviewHistoryResponse.safeParse({ ...valid, coins_spent_per_day: [{ day: 0, coins: -1 }] }))).toEqual(['coins_spent_per_day.0.coins']);
    expect(paths(OverviewHistoryResponse.safeParse({ ...valid, reports_per_hour: [{ hour: 0, organization: 0.5, alliance: 1 }] }))).toEqual(['reports_per_hour.0.organization']);
  });
});
