import { describe, expect, it } from 'vitest';
import { bandOf, DEFAULT_BANDS } from './bands.ts';
import type { Bands } from './bands.ts';

describe('bandOf with the default bands', () => {
  it.each([
    [0, null],
    [0.999, null],
    [1, 'LOW'],
    [59.999, 'LOW'],
    [60, 'MEDIUM'],
    [119.5, 'MEDIUM'],
    [120, 'HIGH'],
    [149.999, 'HIGH'],
    [150, 'CRITICAL'],
    [999, 'CRITICAL'],
    [1000, 'CRITICAL'],
    [1000.001, null],
    [Number.NaN, null],
  ] as const)('%d is %s', (score, band) => {
    expect(bandOf(score, DEFAULT_BANDS)).toBe(band);
  });

  it('uses the defaults when no bands are given', () => {
    expect(bandOf(130)).toBe('HIGH');
  });
});

describe('bandOf with an organization configuration', () => {
  const custom: Bands = {
    low_score: [10, 20],
    medium_score: [30, 40],
    high_score: [40, 50],
    critical_score: [50, 60],
  };

  it('applies the configured bounds, max exclusive except the last band', () => {
    expect(bandOf(10, custom)).toBe('LOW');
    expect(bandOf(20, custom)).toBeNull(); // gap between LOW and MEDIUM
    expect(bandOf(40, custom)).toBe('HIGH');
    expect(bandOf(60, custom)).toBe('CRITICAL');
    expect(bandOf(60.5, custom)).toBeNull();
  });

  it('resolves overlapping bands to the lower one', () => {
    const overlapping: Bands = { ...custom, medium_score: [15, 45] };
    expect(bandOf(15, overlapping)).toBe('LOW');
    expect(bandOf(42, overlapping)).toBe('MEDIUM');
  });
});
