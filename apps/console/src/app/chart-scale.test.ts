import { describe, expect, it } from 'vitest';
import { bandsWithToday, dayLabel, dayTicks, shortNumber, valueTicks } from './chart-scale.ts';

describe('chart scales', () => {
  it('end the value axis just above the data, on a round number', () => {
    expect(valueTicks(130)).toEqual([0, 50, 100, 150]);
    expect(valueTicks(1000)).toEqual([0, 200, 400, 600, 800, 1000]);
    expect(valueTicks(7.3)).toEqual([0, 2, 4, 6, 8]);
    expect(valueTicks(0.3)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(valueTicks(5000)).toEqual([0, 1000, 2000, 3000, 4000, 5000]);
  });

  it('count in whole numbers, and draw an empty series on 0–1', () => {
    expect(valueTicks(3, { integer: true })).toEqual([0, 1, 2, 3]);
    expect(valueTicks(1, { integer: true })).toEqual([0, 1]);
    expect(valueTicks(0, { integer: true })).toEqual([0, 1]);
    expect(valueTicks(Number.NaN)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });

  it('label a time axis on UTC midnights, thinned to fit', () => {
    const nov20 = Date.UTC(2026, 10, 20) / 1000;
    expect(dayTicks(nov20 - 3600, nov20 + 2 * 86_400)).toEqual([nov20, nov20 + 86_400, nov20 + 2 * 86_400]);
    const month = dayTicks(nov20 - 30 * 86_400 + 1800, nov20 + 1800);
    expect(month.length).toBeLessThanOrEqual(6);
    expect(month[0]).toBe(nov20 - 29 * 86_400);
    expect(month.every((t, i) => i === 0 || t - month[i - 1]! === 5 * 86_400)).toBe(true);
    expect(dayLabel(nov20)).toBe('Nov 20');
  });

  it('shorten large tick labels', () => {
    expect(shortNumber(950)).toBe('950');
    expect(shortNumber(1234)).toBe('1,234');
    expect(shortNumber(12_500)).toBe('12.5k');
    expect(shortNumber(3_400_000)).toBe('3.4M');
  });

  it("put today's live band figures in place of today's snapshot, adding today to the days", () => {
    const D = 86_400;
    const live = { low: 1, medium: 2, high: 3, critical: 4 };
    const snap = (day: number, n: number) => ({ day, low: n, medium: 0, high: 0, critical: 0 });
    // Today (day 10) snapshotted at start with nothing yet: the live figures replace it.
    expect(bandsWithToday([8 * D, 9 * D, 10 * D], [snap(9 * D, 5), snap(10 * D, 0)], 10 * D + 3600, live)).toEqual({ days: [8 * D, 9 * D, 10 * D], snapshots: [snap(9 * D, 5), { day: 10 * D, ...live }] });
    // No snapshot of today, and days ending yesterday: today is added to both.
    expect(bandsWithToday([8 * D, 9 * D], [snap(8 * D, 7)], 10 * D, live)).toEqual({ days: [8 * D, 9 * D, 10 * D], snapshots: [snap(8 * D, 7), { day: 10 * D, ...live }] });
  });
});
