import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EVAL_JS, EXEC_PYTHON, liveScore, secondsUntilBelow } from './decay.ts';

const S0S = [1, 2, 5, 10, 50, 100, 250, 500, 999, 1000];
const DAY = 86_400;
const grid: Array<[s0: number, elapsed: number]> = S0S.flatMap((s0) =>
  [0, 1, 3600, 2.5 * s0 * 3600, 10 * DAY, 365 * DAY].map(
    (elapsed): [number, number] => [s0, elapsed],
  ),
);

function closeRelative(actual: number, expected: number, tolerance: number): boolean {
  if (actual === expected) return true;
  return Math.abs(actual - expected) <= tolerance * Math.max(Math.abs(actual), Math.abs(expected));
}

function hasPython(): boolean {
  try {
    execFileSync('python3', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// Mirrors a Python client that evals inside a function: `math` among the globals, the two
// names in a separate locals mapping.
const PYTHON_EVALUATOR = `
import json, math, sys
data = json.load(sys.stdin)
out = [eval(data["expr"], {"math": math}, {"scoreTimeZero": s0, "current_time": t})
       for s0, t in data["grid"]]
print(json.dumps(out))
`;

function evalPython(points: ReadonlyArray<readonly [number, number]>): number[] {
  const stdout = execFileSync('python3', ['-c', PYTHON_EVALUATOR], {
    input: JSON.stringify({ expr: EXEC_PYTHON, grid: points }),
    encoding: 'utf8',
  });
  return JSON.parse(stdout) as number[];
}

describe('liveScore', () => {
  it('starts just under s0, halves at 2.5 * s0 hours and tends to 0', () => {
    expect(liveScore(100, 0)).toBeCloseTo(100 / (1 + Math.exp(-7.5)), 12);
    expect(liveScore(100, 250 * 3600)).toBe(50);
    expect(liveScore(100, 365 * DAY)).toBeLessThan(1e-30);
  });

  it('is 0 for s0 <= 0 and treats negative elapsed as 0', () => {
    expect(liveScore(0, 10)).toBe(0);
    expect(liveScore(-5, 10)).toBe(0);
    expect(liveScore(100, -3600)).toBe(liveScore(100, 0));
  });
});

describe('EVAL_JS', () => {
  const evaluate = new Function('scoreTimeZero', 'current_time', EVAL_JS) as (
    scoreTimeZero: number,
    currentTime: number,
  ) => number;

  it.each(grid)('equals liveScore exactly for s0=%d, elapsed=%d s', (s0, elapsed) => {
    expect(evaluate(s0, elapsed)).toBe(liveScore(s0, elapsed));
  });

  it('agrees on the edge cases', () => {
    for (const [s0, elapsed] of [[0, 5], [-1, 5], [10, -100], [Number.NaN, 5], [10, Number.NaN]]) {
      expect(evaluate(s0!, elapsed!)).toBe(liveScore(s0!, elapsed!));
    }
  });
});

describe('EXEC_PYTHON', () => {
  const python = hasPython();
  if (!python && process.env.CI) throw new Error('CI must install python3: the EXEC_PYTHON checks may not skip there');
  if (!python) console.warn('EXEC_PYTHON test skipped: python3 is not on PATH');

  it.skipIf(!python)('matches liveScore within 1e-9 relative over the grid', () => {
    const results = evalPython(grid);
    expect(results).toHaveLength(grid.length);
    grid.forEach(([s0, elapsed], i) => {
      const expected = liveScore(s0, elapsed);
      expect(closeRelative(results[i]!, expected, 1e-9), `s0=${s0} elapsed=${elapsed}`).toBe(true);
    });
  });

  it.skipIf(!python)('matches liveScore on the edge cases without raising', () => {
    // The last two reach exponents 712.5 and 709, where Python's overflow guard answers 0.0.
    const edges: Array<[number, number]> = [
      [0, 5],
      [-1, 5],
      [10, -100],
      [1, 10 * DAY],
      [1, (709 / 3 + 2.5) * 3600],
    ];
    const results = evalPython(edges);
    edges.forEach(([s0, elapsed], i) => {
      expect(Math.abs(results[i]! - liveScore(s0, elapsed))).toBeLessThan(1e-300);
    });
  });
});

describe('secondsUntilBelow', () => {
  it('is the inverse of liveScore', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.double({ min: 0.001, max: 0.999, noNaN: true }),
        (s0, fraction) => {
          const threshold = s0 * fraction;
          const t = secondsUntilBelow(s0, threshold);
          expect(Number.isFinite(t)).toBe(true);
          expect(t).toBeGreaterThan(0);
          expect(closeRelative(liveScore(s0, t), threshold, 1e-9)).toBe(true);
          expect(liveScore(s0, t * (1 - 1e-6))).toBeGreaterThanOrEqual(threshold);
          expect(liveScore(s0, t * (1 + 1e-6) + 1e-3)).toBeLessThan(threshold);
        },
      ),
    );
  });

  it('halves s0 = 100 after 250 hours', () => {
    expect(secondsUntilBelow(100, 50)).toBe(250 * 3600);
  });

  it('is 0 when the score starts below the threshold', () => {
    expect(secondsUntilBelow(100, 100)).toBe(0);
    expect(secondsUntilBelow(100, 150)).toBe(0);
    expect(secondsUntilBelow(100, 99.99)).toBe(0); // liveScore(100, 0) is 99.94...
    expect(secondsUntilBelow(0, 10)).toBe(0);
    expect(secondsUntilBelow(100, Number.NaN)).toBe(0);
  });

  it('is Infinity when the threshold can never be crossed', () => {
    expect(secondsUntilBelow(100, 0)).toBe(Infinity);
    expect(secondsUntilBelow(100, -1)).toBe(Infinity);
    expect(secondsUntilBelow(0, 0)).toBe(Infinity);
  });
});
