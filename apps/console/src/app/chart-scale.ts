/**
 * Axis scales for the console's charts: a value axis from 0 to a round number just above the
 * data (never a fixed 0–1000), with 3 to 6 round ticks, and time ticks on whole UTC days.
 */

/** The round step (1, 2 or 5 × 10^k) that splits [0, max] into about `count` intervals. */
function niceStep(max: number, count: number): number {
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  // The thresholds sit between the round steps on a log scale (√2, √10, √50), as d3's ticks do.
  const nice = fraction >= Math.sqrt(50) ? 10 : fraction >= Math.sqrt(10) ? 5 : fraction >= Math.SQRT2 ? 2 : 1;
  return nice * power;
}

/**
 * Ticks from 0 to the first round value at or above `max` (the axis's top). Whole numbers only
 * when `integer` (counts): a maximum of 3 reports gets 0, 1, 2, 3, never 0.5.
 */
export function valueTicks(max: number, { count = 4, integer = false }: { count?: number; integer?: boolean } = {}): number[] {
  const top = Number.isFinite(max) && max > 0 ? max : 1;
  let step = niceStep(top, count);
  if (integer) step = Math.max(1, Math.round(step));
  const ticks: number[] = [];
  const last = Math.ceil(top / step - 1e-9) * step;
  for (let v = 0; v <= last + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

const DAY = 86_400;

/**
 * Midnights (UTC) within [from, to] to label a time axis with, at most `most` of them: every
 * day, or every 2nd, 7th… (epoch seconds).
 */
export function dayTicks(from: number, to: number, most = 6): number[] {
  const first = Math.ceil(from / DAY) * DAY;
  const days = Math.floor((to - first) / DAY) + 1;
  if (days <= 0) return [];
  const every = [1, 2, 3, 5, 7, 10, 14, 15, 30].find((n) => Math.ceil(days / n) <= most) ?? Math.ceil(days / most);
  const out: number[] = [];
  for (let t = first; t <= to; t += every * DAY) out.push(t);
  return out;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `Nov 20`: a UTC day as a time axis names it (the axis title says UTC). */
export function dayLabel(epochSeconds: number): string {
  const d = new Date(epochSeconds * 1000);
  return `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}`;
}

/** 1,234 / 12.5k / 3.4M: a tick label that fits beside an axis. */
export function shortNumber(n: number): string {
  const abs = Math.abs(n);
  if (abs >= 1e6) return `${Number((n / 1e6).toPrecision(3))}M`;
  if (abs >= 1e4) return `${Number((n / 1e3).toPrecision(3))}k`;
  return n.toLocaleString('en-US');
}

/** IPv4 indicators per band on one UTC day (a snapshot of the rollups, or the live figures). */
export interface BandDay {
  day: number;
  low: number;
  medium: number;
  high: number;
  critical: number;
}

/**
 * The per-band days with today's live figures in place of today's snapshot: the rollups snapshot
 * a day only now and then (at start, then daily), so the day data arrives would otherwise show
 * the figures from before it arrived, or nothing. `days`, the chart's buckets, gain today when
 * they end before it. Both come back oldest first.
 */
export function bandsWithToday(days: number[], snapshots: BandDay[], now: number, live: Omit<BandDay, 'day'>): { days: number[]; snapshots: BandDay[] } {
  const today = now - (now % DAY);
  const withToday = [...snapshots.filter((s) => s.day !== today), { day: today, ...live }].sort((a, b) => a.day - b.day);
  return { days: days.includes(today) ? days : [...days, today].sort((a, b) => a - b), snapshots: withToday };
}
