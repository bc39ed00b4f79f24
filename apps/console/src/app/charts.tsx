import { dayLabel, dayTicks, shortNumber, valueTicks } from './chart-scale.ts';
import { useId } from './components.tsx';

export interface ChartSeries {
  name: string;
  /** CSS class giving the series its colour in both themes (style.css `.series-*`). */
  className: string;
  values: number[];
}

/** A data table of the chart: what a screen reader, or anyone wanting the figures, reads. */
export interface ChartTable {
  head: string[];
  rows: Array<Array<string | number>>;
}

const W = 400;
const H = 230;
const LEFT = 46;
const RIGHT = 8;
const TOP = 24;
const BOTTOM = 46;

/**
 * Figures over time as SVG: bars (one per bucket, stacked when several series) or lines. The
 * value axis runs from 0 to a round number just above the data, with its unit as the axis title;
 * the time axis is labelled on UTC midnights. role="img" with a title and a description, and the
 * figures as a table under it.
 */
export function TimeChart(props: {
  title: string;
  description: string;
  /** The value axis's title: what is counted, per what (`reports per hour`). */
  unit: string;
  /** Start of each bucket, epoch seconds, oldest first; `step`: a bucket's length in seconds. */
  times: number[];
  step: number;
  series: ChartSeries[];
  kind: 'bars' | 'lines';
  table: ChartTable;
  testId: string;
}) {
  const id = useId('chart');
  const { times, step, series, kind } = props;
  const n = times.length;
  const t0 = times[0] ?? 0;
  const t1 = (times.at(-1) ?? 0) + step;
  const top = kind === 'bars' ? Math.max(0, ...times.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0))) : Math.max(0, ...series.flatMap((s) => s.values));
  const ticks = valueTicks(top, { integer: true });
  const yMax = ticks.at(-1)!;
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const x = (t: number) => LEFT + ((t - t0) / Math.max(1, t1 - t0)) * plotW;
  const y = (v: number) => TOP + plotH - (v / yMax) * plotH;
  const barW = Math.max(0.5, plotW / Math.max(1, n) - (n > 60 ? 0 : 1));
  return (
    <figure class="timechart">
      <svg class="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${id}-t ${id}-d`} data-testid={props.testId}>
        <title id={`${id}-t`}>{props.title}</title>
        <desc id={`${id}-d`}>{props.description}</desc>
        <text x={4} y={14} class="axis-title" data-testid={`${props.testId}-unit`}>
          {props.unit}
        </text>
        {ticks.map((v) => (
          <g key={v}>
            <line x1={LEFT} x2={W - RIGHT} y1={y(v)} y2={y(v)} class="gridline" />
            <text x={LEFT - 4} y={y(v) + 4} class="tick tick-y" text-anchor="end">
              {shortNumber(v)}
            </text>
          </g>
        ))}
        <Marks kind={kind} times={times} step={step} series={series} x={x} y={y} barW={barW} />
        <line x1={LEFT} x2={W - RIGHT} y1={y(0)} y2={y(0)} class="axis" />
        <line x1={LEFT} x2={LEFT} y1={TOP} y2={y(0)} class="axis" />
        {dayTicks(t0, t1).map((t) => (
          <g key={t}>
            <line x1={x(t)} x2={x(t)} y1={y(0)} y2={y(0) + 4} class="axis" />
            <text x={x(t)} y={y(0) + 17} class="tick tick-x" text-anchor="middle">
              {dayLabel(t)}
            </text>
          </g>
        ))}
        <text x={LEFT + plotW / 2} y={H - 6} class="axis-title" text-anchor="middle">
          day (UTC)
        </text>
      </svg>
      {series.length > 1 && <Legend series={series} />}
      <FiguresTable title={props.title} table={props.table} />
    </figure>
  );
}

/** Bars (stacked when several series) or one line per series. */
function Marks(p: { kind: 'bars' | 'lines'; times: number[]; step: number; series: ChartSeries[]; x: (t: number) => number; y: (v: number) => number; barW: number }) {
  const { x, y } = p;
  if (p.kind === 'lines') {
    return (
      <>
        {p.series.map((s) => (
          <polyline key={s.name} class={`series-line ${s.className}`} points={s.values.map((v, i) => `${x(p.times[i]! + p.step / 2).toFixed(1)},${y(v).toFixed(1)}`).join(' ')} />
        ))}
      </>
    );
  }
  return (
    <>
      {p.times.map((t, i) => {
        let base = 0;
        return p.series.map((s) => {
          const v = s.values[i] ?? 0;
          const rect = v > 0 ? <rect key={`${s.name}-${t}`} x={x(t)} width={p.barW} y={y(base + v)} height={y(base) - y(base + v)} class={s.className} /> : null;
          base += v;
          return rect;
        });
      })}
    </>
  );
}

function Legend({ series }: { series: ChartSeries[] }) {
  return (
    <figcaption>
      <ul class="legend">
        {series.map((s) => (
          <li key={s.name}>
            <svg width="12" height="12" aria-hidden="true">
              <rect width="12" height="12" rx="2" class={s.className} />
            </svg>{' '}
            {s.name}
          </li>
        ))}
      </ul>
    </figcaption>
  );
}

function FiguresTable({ title, table }: { title: string; table: ChartTable }) {
  return (
    <details>
      <summary>Figures as a table</summary>
      <div class="table-wrap">
        <table>
          <caption>{title}</caption>
          <thead>
            <tr>
              {table.head.map((h) => (
                <th key={h} scope="col">
                  {h}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {table.rows.map((row) => (
              <tr key={String(row[0])}>
                {row.map((cell, i) => (i === 0 ? <th scope="row">{cell}</th> : <td>{typeof cell === 'number' ? cell.toLocaleString() : cell}</td>))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}
