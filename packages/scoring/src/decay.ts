// Decay of a record's score over time. A record's `score` is s0 (the score at its `ts`) and
// existing clients evaluate `header.eval` / `header.exec_python` themselves, so the three forms
// below (TypeScript, JavaScript body, Python expression) must agree number for number.
// The curve halves s0 at 2.5 * s0 hours: s0 = 100 stays above 50 for about ten days.

/**
 * Live score `secondsElapsed` seconds after time zero:
 * s0 / (1 + exp((3 / s0) * (secondsElapsed / 3600 - 2.5 * s0))).
 * s0 <= 0 (or NaN) gives 0; negative (or NaN) elapsed counts as 0.
 * The arithmetic is EVAL_JS's, operation for operation, so server, agent and existing clients
 * get the same number (===), not merely a close one.
 */
export function liveScore(s0: number, secondsElapsed: number): number {
  if (!(s0 > 0)) return 0;
  const t = secondsElapsed > 0 ? secondsElapsed : 0;
  return s0 / (1 + Math.exp((3 / s0) * (t / 3600 - 2.5 * s0)));
}

/**
 * `header.eval`: a JavaScript function body for
 * `new Function('scoreTimeZero', 'current_time', EVAL_JS)`, where `current_time` is the seconds
 * elapsed since the record's `ts`. Returns exactly liveScore(scoreTimeZero, current_time).
 */
export const EVAL_JS =
  'if (!(scoreTimeZero > 0)) return 0; ' +
  'var t = current_time > 0 ? current_time : 0; ' +
  'return scoreTimeZero / (1 + Math.exp((3 / scoreTimeZero) * (t / 3600 - 2.5 * scoreTimeZero)));';

const PYTHON_EXPONENT =
  '(3 / scoreTimeZero) * (max(current_time, 0) / 3600 - 2.5 * scoreTimeZero)';

/**
 * `header.exec_python`: the same formula as a Python 3 expression over `scoreTimeZero` and
 * `current_time`; the evaluating scope must have `math` imported.
 * Python's math.exp raises OverflowError where JavaScript's Math.exp returns Infinity (exponent
 * above ~709.78), so an exponent of 709 or more yields 0.0; the JavaScript value there is below
 * 1.3e-305 for any s0 <= 1000, so the two agree to any useful precision.
 * The exponent is written twice rather than bound by a lambda: a lambda body cannot see the
 * names when a client evals with a separate locals mapping (e.g. eval() inside a function).
 */
export const EXEC_PYTHON =
  `(scoreTimeZero / (1 + math.exp(${PYTHON_EXPONENT})) if ${PYTHON_EXPONENT} < 709 else 0.0)` +
  ' if scoreTimeZero > 0 else 0.0';

/**
 * Seconds after time zero at which the live score of s0 drops below `threshold`
 * (liveScore(s0, t) >= threshold for t before the result, < threshold after it), from the
 * closed-form inverse h = 2.5 * s0 + (s0 / 3) * ln(s0 / threshold - 1).
 * 0 when the score is already below the threshold at time zero (including s0 <= 0 with a
 * positive threshold, and a NaN threshold, which nothing reaches); Infinity when it never drops
 * below (threshold <= 0: a live score is never negative). Agents use it to expire entries
 * without re-evaluating the formula on a timer.
 */
export function secondsUntilBelow(s0: number, threshold: number): number {
  if (Number.isNaN(threshold)) return 0;
  if (threshold <= 0) return Infinity;
  if (!(s0 > threshold)) return 0;
  const hours = 2.5 * s0 + (s0 / 3) * Math.log(s0 / threshold - 1);
  return hours > 0 ? hours * 3600 : 0;
}

/**
 * The last whole second after time zero at which the live score of s0 is still >= threshold:
 * the largest integer e >= 0 with liveScore(s0, e) >= threshold, -1 when there is none,
 * Infinity when there is no last one (threshold <= 0). Computed with liveScore itself, so a
 * consumer that compares liveScore with the threshold and one that compares elapsed seconds
 * with this figure agree to the second (the closed form alone can be off by one).
 */
export function lastSecondAtOrAbove(s0: number, threshold: number): number {
  if (liveScore(s0, 0) < threshold) return -1;
  const until = secondsUntilBelow(s0, threshold);
  if (!Number.isFinite(until)) return Infinity;
  let e = Math.max(0, Math.floor(until));
  while (e > 0 && liveScore(s0, e) < threshold) e -= 1;
  while (liveScore(s0, e + 1) >= threshold) e += 1;
  return e;
}

/**
 * The score a record is re-anchored with when it is delivered again at a later `ts` without a
 * report (a decision or a setting of one organization changed): its live score at that second,
 * as a whole score 1..1000. From then on the record decays from this new anchor, which keeps it
 * alive longer than its old anchor would have (docs/indicators.md, "Re-delivery and decay").
 */
export function reanchoredScore(s0: number, secondsElapsed: number): number {
  return Math.min(1000, Math.max(1, Math.round(liveScore(s0, secondsElapsed))));
}
