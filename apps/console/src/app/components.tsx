import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { liveScore } from '@rampart/scoring';
import { describeError } from './api.ts';
import { shortNumber, valueTicks } from './chart-scale.ts';

/** Loads once (and again when `deps` change); `reload` re-runs it. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []): { data?: T; error?: string; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (err: unknown) => live && setState({ error: describeError(err).message, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

export function Notice({ kind, children }: { kind: 'error' | 'ok' | 'info'; children: ComponentChildren }) {
  return (
    <p class={`notice ${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </p>
  );
}

export function Loading({ error, loading }: { error?: string | undefined; loading: boolean }) {
  if (error) return <Notice kind="error">{error}</Notice>;
  return loading ? <p aria-busy="true">Loading…</p> : null;
}

let ids = 0;
export function useId(prefix: string): string {
  const [id] = useState(() => `${prefix}-${++ids}`);
  return id;
}

/** A labelled input with its validation message next to it. */
export function Field(props: {
  label: string;
  value: string;
  onInput: (value: string) => void;
  error?: string | undefined;
  type?: string;
  hint?: string;
  disabled?: boolean;
  name?: string;
}) {
  const id = useId('f');
  return (
    <div class={`field${props.error ? ' invalid' : ''}`}>
      <label for={id}>{props.label}</label>
      <input
        id={id}
        name={props.name ?? props.label}
        type={props.type ?? 'text'}
        value={props.value}
        disabled={props.disabled}
        aria-invalid={props.error ? 'true' : undefined}
        aria-describedby={props.error ? `${id}-err` : props.hint ? `${id}-hint` : undefined}
        onInput={(e) => props.onInput((e.target as HTMLInputElement).value)}
      />
      {props.hint && !props.error && <small id={`${id}-hint`}>{props.hint}</small>}
      {props.error && (
        <small id={`${id}-err`} class="error-text">
          {props.error}
        </small>
      )}
    </div>
  );
}

export function Switch(props: { label: string; checked: boolean; onChange: (v: boolean) => void; disabled?: boolean }) {
  const id = useId('s');
  return (
    <div class="switch">
      <input id={id} type="checkbox" role="switch" checked={props.checked} disabled={props.disabled} onChange={(e) => props.onChange((e.target as HTMLInputElement).checked)} />
      <label for={id}>{props.label}</label>
    </div>
  );
}

/** Horizontal bars, one per label, drawn as SVG (no chart library needed for four bars). */
export function BarChart({ data, title }: { data: Array<{ label: string; value: number; color: string }>; title: string }) {
  const max = Math.max(1, ...data.map((d) => d.value));
  const row = 34;
  return (
    <svg class="chart" viewBox={`0 0 400 ${data.length * row + 10}`} role="img" aria-label={`${title}: ${data.map((d) => `${d.label} ${d.value}`).join(', ')}`}>
      {data.map((d, i) => (
        <g key={d.label} transform={`translate(0 ${i * row + 5})`}>
          <text x="0" y="18" class="chart-label">
            {d.label}
          </text>
          <rect x="90" y="4" height="20" width={Math.max(1, (d.value / max) * 250)} fill={d.color} rx="3" />
          <text x={96 + (d.value / max) * 250} y="19" class="chart-value">
            {d.value.toLocaleString()}
          </text>
        </g>
      ))}
    </svg>
  );
}

/**
 * The live score of an indicator over the coming days, from the decay formula, with the threshold
 * line. The score axis runs from 0 to a round number just above the curve and the threshold (a
 * score of 130 is drawn on 0–150, not on 0–1000).
 */
export function ScorePlot({ s0, ts, threshold, days = 14 }: { s0: number; ts: number; threshold?: number | undefined; days?: number }) {
  const now = Date.now() / 1000;
  const w = 560;
  const h = 190;
  const left = 46;
  const top = 24;
  const bottom = 34;
  const steps = 120;
  const scores: number[] = [];
  for (let i = 0; i <= steps; i++) scores.push(liveScore(s0, now + (i / steps) * days * 86_400 - ts));
  const ticks = valueTicks(Math.max(...scores, threshold ?? 0));
  const yMax = ticks.at(-1)!;
  const x = (i: number) => left + (i / steps) * (w - left - 5);
  const y = (s: number) => h - bottom - (s / yMax) * (h - bottom - top);
  const today = scores[0]!;
  return (
    <svg class="plot" viewBox={`0 0 ${w} ${h}`} role="img" aria-label={`Live score now ${today.toFixed(1)}, ${scores.at(-1)!.toFixed(1)} in ${days} days${threshold === undefined ? '' : `; threshold ${threshold}`}`} data-testid="score-plot">
      <text x={4} y={14} class="axis-title">
        live score
      </text>
      {ticks.map((s) => (
        <g key={s}>
          <line x1={left} x2={w - 5} y1={y(s)} y2={y(s)} class="gridline" />
          <text x={left - 4} y={y(s) + 4} class="tick tick-y" text-anchor="end">
            {shortNumber(s)}
          </text>
        </g>
      ))}
      <line x1={left} y1={h - bottom} x2={w - 5} y2={h - bottom} class="axis" />
      <line x1={left} y1={top} x2={left} y2={h - bottom} class="axis" />
      {[0, Math.round(days / 2), days].map((d) => (
        <text key={d} x={x((d / days) * steps)} y={h - 12} class="tick" text-anchor={d === days ? 'end' : 'middle'}>
          {d === 0 ? 'now' : `+${d} days`}
        </text>
      ))}
      {threshold !== undefined && <line x1={left} x2={w - 5} y1={y(threshold)} y2={y(threshold)} class="threshold" />}
      <polyline points={scores.map((s, i) => `${x(i).toFixed(1)},${y(s).toFixed(1)}`).join(' ')} class="line" />
    </svg>
  );
}

export function History({ entries }: { entries: Array<{ version: number; changed_by: string; changed_at: string; changed_fields: string[] }> | undefined }) {
  if (!entries) return null;
  if (entries.length === 0) return <p>No changes yet.</p>;
  return (
    <div class="table-wrap history">
    <table class="browse">
      <caption>Change history</caption>
      <thead>
        <tr>
          <th scope="col">Version</th>
          <th scope="col">Who</th>
          <th scope="col">When</th>
          <th scope="col">Fields</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((e) => (
          <tr key={e.version}>
            <td data-label="Version">{e.version}</td>
            <td data-label="Who">{e.changed_by}</td>
            <td data-label="When">{formatTime(e.changed_at)}</td>
            <td data-label="Fields">{e.changed_fields.join(', ') || '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}

/**
 * Every date of the console in one style, with its time zone: `2026-11-26 14:05 UTC` (the
 * browser's zone). Accepts epoch seconds or an ISO string.
 */
export function formatTime(at: number | string | null | undefined): string {
  if (at === null || at === undefined || at === '') return '—';
  const date = typeof at === 'number' ? new Date(at * 1000) : new Date(at);
  if (Number.isNaN(date.getTime())) return String(at);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'short' })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute} ${parts.timeZoneName}`;
}

/** A date of formatTime kept on one line in tables (its hyphens would otherwise break it). */
export function Time({ at }: { at: number | string | null | undefined }) {
  return <span class="time">{formatTime(at)}</span>;
}

/**
 * Where focus goes once a confirmation is gone and took the focused button with it: after
 * Cancel, the control now in its place (the button that asked); after Yes, the section's message
 * of the outcome; else the section's heading; never the page body.
 */
export function refocusAfter(answer: 'yes' | 'cancel' | undefined, place: Element | null, section: Element | null): void {
  const active = document.activeElement;
  if (active && active !== document.body && active.isConnected) return;
  const control = place?.isConnected ? place.querySelector<HTMLElement>('button:not([disabled]), a[href], input:not([disabled])') : null;
  const notice = section?.querySelector<HTMLElement>('.notice');
  const target = (answer === 'yes' ? (notice ?? control) : (control ?? notice)) ?? section?.querySelector<HTMLElement>('h1, h2');
  if (!target) return;
  if (!target.matches('button, a[href], input')) target.tabIndex = -1;
  target.focus();
}

/**
 * A question with its two answers, in place of the button that asked it. Focus moves to the
 * question's Cancel (the safe answer); when it is answered, focus goes where refocusAfter says.
 */
export function Confirm(props: { label: string; question?: string; yes: string; onYes: () => void; onCancel: () => void }) {
  const group = useRef<HTMLSpanElement>(null);
  const answer = useRef<'yes' | 'cancel'>();
  useEffect(() => {
    const place = group.current?.parentElement ?? null;
    const section = group.current?.closest('section, article') ?? null;
    group.current?.querySelector<HTMLButtonElement>('button.secondary')?.focus();
    return () => {
      // After the new content is drawn (Preact unmounts before it inserts what replaces this).
      setTimeout(() => refocusAfter(answer.current, place, section), 0);
    };
  }, []);
  return (
    <span role="group" aria-label={props.label} class="actions" ref={group}>
      {props.question && <span>{props.question}</span>}
      <button
        type="button"
        class="danger"
        onClick={() => {
          answer.current = 'yes';
          props.onYes();
        }}
      >
        {props.yes}
      </button>
      <button
        type="button"
        class="secondary"
        onClick={() => {
          answer.current = 'cancel';
          props.onCancel();
        }}
      >
        Cancel
      </button>
    </span>
  );
}

/** A labelled drop-down of `[value, label]` options. */
export function Select(props: { label: string; value: string; options: Array<[string, string]>; onChange: (v: string) => void }) {
  const id = useId('sel');
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select id={id} name={props.label} value={props.value} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)}>
        {props.options.map(([v, l]) => (
          <option key={v} value={v}>
            {l}
          </option>
        ))}
      </select>
    </div>
  );
}
