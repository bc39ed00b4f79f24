import { useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { describeError } from '../api.ts';
import { Notice } from '../components.tsx';
import { download, toCsv } from '../csv.ts';
import { nextSort, sortRows, totalsLabel, type SortState, type SortValue } from '../table-logic.ts';
import type { IndicatorKind } from '../indicator-kind.ts';

/** Most rows one CSV export walks (pages of the largest size the API allows). */
const EXPORT_LIMIT = 10_000;

export interface Row {
  kind: IndicatorKind;
  value: string;
}
export const rowKey = (r: Row) => `${r.kind} ${r.value}`;

/** A column: its header, its cell, and what it sorts by (absent: not sortable). */
export type Column<T> = [string, (row: T) => ComponentChildren, ((row: T) => SortValue)?];

/**
 * An indicator as a link that runs its look-up, in a monospace that never breaks an address or
 * a domain (URLs and digests, too long for a phone, may break anywhere).
 */
export function IndicatorLink({ kind, value }: Row) {
  return (
    <a class={`value${kind === 'url' || kind === 'file' ? ' long' : ''}`} href={`#/lookup?q=${encodeURIComponent(value)}`}>
      {value}
    </a>
  );
}

/**
 * A header that sorts its column: a button (Enter and Space work), aria-sort on the header
 * cell, and an arrow that shows the direction.
 */
export function SortHeader(props: { name: string; sort: SortState | undefined; onSort: (s: SortState | undefined) => void }) {
  const { name, sort } = props;
  const direction = sort?.column === name ? sort.direction : undefined;
  return (
    <th scope="col" aria-sort={direction ?? 'none'}>
      <button type="button" class="sort" onClick={() => props.onSort(nextSort(sort, name))}>
        {name}
        <span aria-hidden="true" class="sort-arrow">
          {direction === 'ascending' ? '▲' : direction === 'descending' ? '▼' : '↕'}
        </span>
      </button>
    </th>
  );
}

/**
 * A table of rows with a checkbox each (and one for the whole page), sortable by the columns
 * that say how, with its totals line. Under 600 px wide, each row is a card (style.css).
 */
export function SelectableTable<T extends Row>(props: {
  label: string;
  rows: T[];
  columns: Array<Column<T>>;
  selected: Map<string, T>;
  setSelected: (m: Map<string, T>) => void;
  selectable: boolean;
  /** Rows on the pages before this one, and whether a next page exists (for the totals line). */
  before: number;
  hasNext: boolean;
}) {
  const { selected, setSelected } = props;
  const [sort, setSort] = useState<SortState>();
  const sortKey = props.columns.find(([name]) => name === sort?.column)?.[2];
  const rows = sort && sortKey ? sortRows(props.rows, sortKey, sort.direction) : props.rows;
  const all = rows.length > 0 && rows.every((r) => selected.has(rowKey(r)));
  const toggle = (r: T, on: boolean) => {
    const next = new Map(selected);
    if (on) next.set(rowKey(r), r);
    else next.delete(rowKey(r));
    setSelected(next);
  };
  const onAll = (on: boolean) => {
    const next = new Map(selected);
    for (const r of rows) {
      if (on) next.set(rowKey(r), r);
      else next.delete(rowKey(r));
    }
    setSelected(next);
  };
  const totals = (
    <p class="muted totals" data-testid="totals" aria-live="polite">
      {totalsLabel({ shown: rows.length, before: props.before, hasNext: props.hasNext })}
      {sort && ` · sorted by ${sort.column.toLowerCase()}, ${sort.direction} (this page)`}
    </p>
  );
  if (rows.length === 0)
    return (
      <>
        {totals}
        <Notice kind="info">Nothing matches these filters.</Notice>
      </>
    );
  return (
    <>
      {totals}
      <div class="table-wrap">
        <table aria-label={props.label} class={props.selectable ? 'browse selectable' : 'browse'}>
          <Head selectable={props.selectable} all={all} onAll={onAll} columns={props.columns} sort={sort} onSort={setSort} />
          <tbody>
            {rows.map((r) => (
              <tr key={rowKey(r)}>
                {props.selectable && (
                  <td class="select">
                    <input type="checkbox" aria-label={`Select ${r.value}`} checked={selected.has(rowKey(r))} onChange={(e) => toggle(r, (e.target as HTMLInputElement).checked)} />
                  </td>
                )}
                {props.columns.map(([name, cell], i) => (
                  <td key={name} data-label={name} class={i === 0 ? 'primary' : undefined}>
                    {cell(r)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** The header row: the select-all box, then a header per column (a sort button where it sorts). */
function Head<T>(props: { selectable: boolean; all: boolean; onAll: (on: boolean) => void; columns: Array<Column<T>>; sort: SortState | undefined; onSort: (s: SortState | undefined) => void }) {
  return (
    <thead>
      <tr>
        {props.selectable && (
          <th scope="col">
            <input type="checkbox" aria-label="Select every row of this page" checked={props.all} onChange={(e) => props.onAll((e.target as HTMLInputElement).checked)} />
          </th>
        )}
        {props.columns.map(([name, , key]) =>
          key ? (
            <SortHeader key={name} name={name} sort={props.sort} onSort={props.onSort} />
          ) : (
            <th scope="col" key={name}>
              {name}
            </th>
          ),
        )}
      </tr>
    </thead>
  );
}

export function Pager(props: { pageNumber: number; hasNext: boolean; previous: () => void; next: () => void }) {
  return (
    <nav class="actions pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={props.pageNumber === 1} onClick={props.previous}>
        Previous page
      </button>
      <span>Page {props.pageNumber}</span>
      <button type="button" class="secondary" disabled={!props.hasNext} onClick={props.next}>
        Next page
      </button>
    </nav>
  );
}

/** Walks every page of the filtered list (up to EXPORT_LIMIT rows) and offers it as CSV. */
export function ExportButton<T>(props: { name: string; walk: () => AsyncGenerator<T>; columns: Array<[string, (row: T) => unknown]> }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  async function run() {
    setBusy(true);
    setError(undefined);
    try {
      const rows: T[] = [];
      for await (const row of props.walk()) {
        rows.push(row);
        if (rows.length >= EXPORT_LIMIT) break;
      }
      download(props.name, toCsv(props.columns, rows));
    } catch (err) {
      setError(describeError(err).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <>
      <button type="button" class="secondary" disabled={busy} onClick={() => void run()}>
        {busy ? 'Exporting…' : 'Export CSV'}
      </button>
      {error && <Notice kind="error">{error}</Notice>}
    </>
  );
}
