/**
 * Pure logic of the console's tables: sorting by a clicked column, the totals line, rounding of
 * score components, and the import page's choice of format. Unit-tested beside (table-logic.test.ts).
 */

export type SortValue = string | number | null | undefined;
export type SortDirection = 'ascending' | 'descending';
export interface SortState {
  column: string;
  direction: SortDirection;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(\d{1,2}))?$/;

/** An IPv4 address or network as one number (network length as the fraction), else undefined. */
function ipv4Number(text: string): number | undefined {
  const m = IPV4.exec(text);
  if (!m) return undefined;
  const [a, b, c, d] = [m[1], m[2], m[3], m[4]].map(Number) as [number, number, number, number];
  return ((a * 256 + b) * 256 + c) * 256 + d + Number(m[5] ?? 32) / 100;
}

/**
 * Order of two cells: numbers by value, IPv4 addresses by address (10.0.0.9 before 10.0.0.10),
 * other text in natural order (`agent-2` before `agent-10`); an empty cell (null, undefined, '')
 * after every other, whichever the direction.
 */
export function compareValues(a: SortValue, b: SortValue): number {
  const emptyA = a === null || a === undefined || a === '';
  const emptyB = b === null || b === undefined || b === '';
  if (emptyA || emptyB) return emptyA === emptyB ? 0 : emptyA ? 1 : -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const ipA = ipv4Number(String(a));
  const ipB = ipv4Number(String(b));
  if (ipA !== undefined && ipB !== undefined) return ipA - ipB;
  return String(a).localeCompare(String(b), 'en', { numeric: true, sensitivity: 'base' });
}

/** The rows in the order of `sort` (stable: equal cells keep the order the API gave); a copy. */
export function sortRows<T>(rows: readonly T[], key: (row: T) => SortValue, direction: SortDirection): T[] {
  const sign = direction === 'ascending' ? 1 : -1;
  return rows
    .map((row, i) => ({ row, i, v: key(row) }))
    .sort((x, y) => {
      const emptyX = x.v === null || x.v === undefined || x.v === '';
      const emptyY = y.v === null || y.v === undefined || y.v === '';
      // Empty cells stay last in both directions.
      if (emptyX || emptyY) return emptyX === emptyY ? x.i - y.i : emptyX ? 1 : -1;
      return sign * compareValues(x.v, y.v) || x.i - y.i;
    })
    .map((x) => x.row);
}

/**
 * The sort after a click on `column`'s header: a new column sorts ascending, the sorted one turns
 * descending, and a third click returns to the API's order (undefined).
 */
export function nextSort(current: SortState | undefined, column: string): SortState | undefined {
  if (current?.column !== column) return { column, direction: 'ascending' };
  return current.direction === 'ascending' ? { column, direction: 'descending' } : undefined;
}

const n = (v: number) => v.toLocaleString('en-US');

/**
 * The totals line of a table: `50 of 1,234` when the API counts the whole list, else the rows
 * shown by position, `Rows 51–100, more on the next page`, or `Rows 1–3 of 3` on the last page.
 */
export function totalsLabel(p: { shown: number; before?: number; total?: number | undefined; hasNext?: boolean }): string {
  const before = p.before ?? 0;
  if (p.total !== undefined) return `${n(p.shown)} of ${n(p.total)}`;
  if (p.shown === 0) return before === 0 ? 'No rows' : `No rows after row ${n(before)}`;
  const range = `Rows ${n(before + 1)}–${n(before + p.shown)}`;
  return p.hasNext ? `${range}, more on the next page` : `${range} of ${n(before + p.shown)}`;
}

/**
 * A score component as people read it: integers as they are, at most 3 significant decimals
 * below 1, 2 decimals below 100, whole numbers above (0.492310 → 0.492, 4.123456 → 4.12,
 * 492.31 → 492); anything not a number unchanged.
 */
export function roundComponent(v: unknown): unknown {
  if (typeof v !== 'number' || !Number.isFinite(v) || Number.isInteger(v)) return v;
  const abs = Math.abs(v);
  if (abs >= 100) return Math.round(v);
  if (abs >= 1) return Number(v.toFixed(2));
  return Number(v.toPrecision(3));
}

/** What each score component of a look-up (`explain=yes`, scoring v3.2) means. */
export const COMPONENT_MEANINGS: Record<string, { label: string; meaning: string }> = {
  algorithm: { label: 'Algorithm', meaning: 'Version of the scoring algorithm that computed these figures' },
  organizations: { label: 'Reporting organizations', meaning: 'Distinct organizations that reported it' },
  events: { label: 'Reports', meaning: 'Reports merged across every organization' },
  baseWeight: { label: 'Base weight', meaning: "Sum over organizations of trust × confidence × severity factor" },
  repeatWeight: { label: 'Repeat weight', meaning: 'What repeated reports of one organization add on top of the base weight (at most half)' },
  weight: { label: 'Weight', meaning: 'Base weight + repeat weight' },
  saturation: { label: 'Saturation', meaning: '1 − exp(−weight / 7): how close the weight is to the maximum score, from 0 to 1' },
  raw: { label: 'Raw score', meaning: '1000 × saturation, before rounding and clamping to 1–1000' },
  s0: { label: 'Score at time zero', meaning: 'The raw score rounded and clamped to 1–1000, as of the last report' },
  live_score: { label: 'Live score', meaning: 'The score at time zero decayed by the time since the last report' },
  seconds_since_ts: { label: 'Seconds since last report', meaning: 'Time the decay has run on the score at time zero' },
  decision_reason: { label: 'Decision reason', meaning: "Why your organization's decision applies (or none)" },
};

/** The rows of the score components table: label, rounded value, meaning, in the API's order. */
export function componentRows(explain: Record<string, unknown>): Array<{ key: string; label: string; value: unknown; meaning: string }> {
  return Object.entries(explain).map(([key, value]) => ({
    key,
    label: COMPONENT_MEANINGS[key]?.label ?? key,
    value: roundComponent(value),
    meaning: COMPONENT_MEANINGS[key]?.meaning ?? '',
  }));
}

export type ImportFormatName = 'csv' | 'stix21' | 'misp';

/**
 * The format a chosen file most likely has, from its name and text: a JSON object whose `type`
 * is `bundle` is STIX 2.1, one holding `Event` (or `Attribute`) is MISP, `.csv` or other text
 * CSV; undefined when nothing tells.
 */
export function guessFormat(name: string, text: string): ImportFormatName | undefined {
  const head = text.trimStart();
  if (head.startsWith('{')) {
    if (/"type"\s*:\s*"bundle"/.test(head)) return 'stix21';
    if (/"(Event|Attribute)"\s*:/.test(head)) return 'misp';
    return undefined;
  }
  if (/\.csv$/i.test(name) || /^value\s*,\s*kind/i.test(head)) return 'csv';
  return undefined;
}
