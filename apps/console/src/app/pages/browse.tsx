import { useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { DecisionListResponse, IndicatorListResponse, type DecisionItem, type DecisionListQuery, type IndicatorItem, type IndicatorListQuery } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Field, Loading, Notice, Select, formatTime, useLoad } from '../components.tsx';
import { canContribute, type Session } from '../session.ts';
import type { IndicatorKind } from '../indicator-kind.ts';
import { setDecision } from '../decide.ts';
import { NewDecision } from './new-decision.tsx';
import { download, toCsv } from '../csv.ts';

/** Most rows one CSV export walks (pages of the largest size the API allows). */
const EXPORT_LIMIT = 10_000;
const KINDS: IndicatorKind[] = ['ipv4', 'domain', 'url', 'file'];
const DECISION_LABEL: Record<string, string> = { '0': 'Whitelist', '1': 'Blacklist', null: '—' };

type Query = Record<string, string>;
const compact = (q: Query): Query => Object.fromEntries(Object.entries(q).filter(([, v]) => v.trim() !== '').map(([k, v]) => [k, v.trim()]));

/**
 * Pages over a cursor list: the cursors of the pages before this one are kept, so Previous works
 * without the API paging backwards.
 */
function useCursorPages<T>(load: (query: Query, page: string | undefined) => Promise<{ items: T[]; next_page: string | null }>, query: Query) {
  const [stack, setStack] = useState<string[]>([]);
  const [version, setVersion] = useState(0);
  const key = JSON.stringify(query);
  const lastKey = useRef(key);
  if (lastKey.current !== key) {
    lastKey.current = key;
    if (stack.length > 0) setStack([]);
  }
  const page = stack.at(-1);
  const res = useLoad(() => load(query, page), [key, page, version]);
  return {
    ...res,
    pageNumber: stack.length + 1,
    next: () => res.data?.next_page && setStack([...stack, res.data.next_page]),
    previous: () => setStack(stack.slice(0, -1)),
    reload: () => setVersion((v) => v + 1),
  };
}

interface Row {
  kind: IndicatorKind;
  value: string;
}
const rowKey = (r: Row) => `${r.kind} ${r.value}`;

/** Selected rows and the bulk whitelist / blacklist / clear over them. */
function BulkActions({ session, selected, onDone }: { session: Session; selected: Row[]; onDone: () => void }) {
  const [busy, setBusy] = useState(false);
  const [ttlHours, setTtlHours] = useState('0');
  const [reason, setReason] = useState('');
  const [outcome, setOutcome] = useState<{ kind: 'ok' | 'error'; text: string }>();
  if (!canContribute(session)) return null;
  async function apply(decision: -1 | 0 | 1, label: string) {
    setBusy(true);
    setOutcome(undefined);
    const hours = Number(ttlHours);
    const ttl = decision === 1 && hours > 0 ? Math.floor(Date.now() / 1000 + hours * 3600) : undefined;
    const failed: string[] = [];
    // One at a time: each is a separate decision the server records and re-delivers.
    for (const row of selected) {
      try {
        await setDecision(session.api, row.kind, row.value, decision, ttl, reason);
      } catch (err) {
        failed.push(`${row.value}: ${describeError(err).message}`);
      }
    }
    setBusy(false);
    const done = selected.length - failed.length;
    setOutcome(failed.length ? { kind: 'error', text: `${label}: ${done} changed, ${failed.length} failed (${failed[0]})` } : { kind: 'ok', text: `${label}: ${done} changed.` });
    onDone();
  }
  return (
    <fieldset class="decisions bulk" aria-busy={busy ? 'true' : undefined}>
      <legend>{selected.length} selected</legend>
      <Field label="TTL of a blacklisting (hours, 0 = none; IPv4 only)" type="number" value={ttlHours} onInput={setTtlHours} />
      <Field label="Reason (optional, kept with each decision)" name="bulk-reason" value={reason} onInput={setReason} />
      <button type="button" class="secondary" disabled={busy || selected.length === 0} onClick={() => void apply(0, 'Whitelist')}>
        Whitelist selected
      </button>
      <button type="button" class="danger" disabled={busy || selected.length === 0} onClick={() => void apply(1, 'Blacklist')}>
        Blacklist selected
      </button>
      <button type="button" class="secondary" disabled={busy || selected.length === 0} onClick={() => void apply(-1, 'Clear')}>
        Clear decision
      </button>
      {outcome && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
    </fieldset>
  );
}

/** A table of rows with a checkbox each (and one for the whole page). */
function SelectableTable<T extends Row>(props: {
  label: string;
  rows: T[];
  columns: Array<[string, (row: T) => ComponentChildren]>;
  selected: Map<string, T>;
  setSelected: (m: Map<string, T>) => void;
  selectable: boolean;
}) {
  const { rows, selected, setSelected } = props;
  const all = rows.length > 0 && rows.every((r) => selected.has(rowKey(r)));
  const toggle = (r: T, on: boolean) => {
    const next = new Map(selected);
    if (on) next.set(rowKey(r), r);
    else next.delete(rowKey(r));
    setSelected(next);
  };
  if (rows.length === 0) return <Notice kind="info">Nothing matches these filters.</Notice>;
  return (
    <div class="table-wrap">
      <table aria-label={props.label} class={props.selectable ? 'browse selectable' : 'browse'}>
        <thead>
          <tr>
            {props.selectable && (
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label="Select every row of this page"
                  checked={all}
                  onChange={(e) => {
                    const on = (e.target as HTMLInputElement).checked;
                    const next = new Map(selected);
                    for (const r of rows) {
                      if (on) next.set(rowKey(r), r);
                      else next.delete(rowKey(r));
                    }
                    setSelected(next);
                  }}
                />
              </th>
            )}
            {props.columns.map(([name]) => (
              <th scope="col" key={name}>
                {name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={rowKey(r)}>
              {props.selectable && (
                <td>
                  <input type="checkbox" aria-label={`Select ${r.value}`} checked={selected.has(rowKey(r))} onChange={(e) => toggle(r, (e.target as HTMLInputElement).checked)} />
                </td>
              )}
              {props.columns.map(([name, cell]) => (
                <td key={name} data-label={name}>
                  {cell(r)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Pager(props: { pageNumber: number; hasNext: boolean; previous: () => void; next: () => void }) {
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
function ExportButton<T>(props: { name: string; walk: () => AsyncGenerator<T>; columns: Array<[string, (row: T) => unknown]> }) {
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

function FilterForm(props: { label: string; onApply: () => void; children: ComponentChildren }) {
  return (
    <form
      class="card filters"
      aria-label={props.label}
      onSubmit={(e) => {
        e.preventDefault();
        props.onApply();
      }}
    >
      <div class="grid">{props.children}</div>
      <button type="submit">Apply filters</button>
    </form>
  );
}

const lookupLink = (value: string) => <a href={`#/lookup?q=${encodeURIComponent(value)}`}>{value}</a>;
const score = (n: number | null) => (n === null ? '—' : n.toFixed(1));

export function DecisionsPage({ session }: { session: Session }) {
  const { api } = session;
  const [draft, setDraft] = useState<Query>({ kind: '', decision: '', q: '' });
  const [query, setQuery] = useState<Query>({});
  const [selected, setSelected] = useState(new Map<string, DecisionItem>());
  const list = useCursorPages((q, page) => api.get('/decisions', DecisionListResponse, { ...q, ...(page ? { page } : {}) }), query);
  const set = (k: string) => (v: string) => setDraft({ ...draft, [k]: v });
  const columns: Array<[string, (r: DecisionItem) => ComponentChildren]> = [
    ['Indicator', (r) => lookupLink(r.value)],
    ['Kind', (r) => r.kind],
    ['Decision', (r) => `${DECISION_LABEL[String(r.decision)]}${r.ttl ? ` until ${formatTime(r.ttl)}` : ''}${r.expired ? ' (expired)' : ''}`],
    ['Held', (r) => (r.held ? 'yes' : 'no: nobody reported it')],
    ['Live score', (r) => score(r.live_score)],
    ['Set', (r) => formatTime(r.updated_at)],
    ['Set by', (r) => r.set_by ?? '—'],
    ['Reason', (r) => r.reason ?? '—'],
  ];
  const done = () => {
    setSelected(new Map());
    list.reload();
  };
  return (
    <section aria-labelledby="decisions-h">
      <h1 id="decisions-h">Decisions</h1>
      <NewDecision session={session} onDone={done} />
      <FilterForm label="Filter decisions" onApply={() => setQuery(compact(draft))}>
        <Select label="Kind" value={draft.kind!} onChange={set('kind')} options={[['', 'every kind'], ...KINDS.map((k): [string, string] => [k, k])]} />
        <Select label="Decision" value={draft.decision!} onChange={set('decision')} options={[['', 'any'], ['0', 'Whitelist'], ['1', 'Blacklist']]} />
        <Field label="Contains" name="q" value={draft.q!} onInput={set('q')} />
      </FilterForm>
      <div class="actions">
        <ExportButton
          name="decisions.csv"
          walk={() => api.client.decisions({ ...(query as Partial<DecisionListQuery>), page_size: 500 })}
          columns={[
            ['kind', (r: DecisionItem) => r.kind],
            ['value', (r) => r.value],
            ['decision', (r) => r.decision],
            ['ttl', (r) => (r.ttl === null ? '' : new Date(r.ttl * 1000).toISOString())],
            ['expired', (r) => r.expired],
            ['held', (r) => r.held],
            ['live_score', (r) => r.live_score],
            ['updated_at', (r) => r.updated_at],
            ['set_by', (r) => r.set_by ?? ''],
            ['reason', (r) => r.reason ?? ''],
          ]}
        />
      </div>
      <BulkActions session={session} selected={[...selected.values()]} onDone={done} />
      {list.error && <Notice kind="error">{list.error}</Notice>}
      {!list.data ? <Loading loading={list.loading} /> : <SelectableTable label="Decisions" rows={list.data.items} columns={columns} selected={selected} setSelected={setSelected} selectable={canContribute(session)} />}
      <Pager pageNumber={list.pageNumber} hasNext={Boolean(list.data?.next_page)} previous={list.previous} next={list.next} />
    </section>
  );
}

export function IndicatorsPage({ session }: { session: Session }) {
  const { api } = session;
  const empty: Query = { kind: 'ipv4', band: '', decision: '', source: '', tag: '', reporter: '', country: '', asn: '', q: '', min_score: '', max_score: '' };
  const [draft, setDraft] = useState<Query>(empty);
  const [query, setQuery] = useState<Query>({ kind: 'ipv4' });
  const [selected, setSelected] = useState(new Map<string, IndicatorItem>());
  const list = useCursorPages((q, page) => api.get('/indicators', IndicatorListResponse, { ...q, ...(page ? { page } : {}) }), query);
  const set = (k: string) => (v: string) => setDraft({ ...draft, [k]: v });
  const ipv4 = draft.kind === 'ipv4';
  const columns: Array<[string, (r: IndicatorItem) => ComponentChildren]> = [
    ['Indicator', (r) => lookupLink(r.value)],
    ['Live score', (r) => score(r.live_score)],
    ['Score at ts', (r) => r.score],
    ['Reporters', (r) => r.members],
    ['Reports', (r) => r.events],
    [query.kind === 'ipv4' ? 'Sources / tags' : 'Tags', (r) => [...r.sources, ...r.tags].join(', ') || '—'],
    ...(query.kind === 'ipv4' ? ([['Country / AS', (r: IndicatorItem) => [r.country, r.asn].filter(Boolean).join(' · ') || '—']] as Array<[string, (r: IndicatorItem) => ComponentChildren]>) : []),
    ['Your decision', (r) => `${DECISION_LABEL[String(r.decision)]}${r.ttl ? ` until ${formatTime(r.ttl)}` : ''}`],
    ['Last update', (r) => formatTime(r.ts)],
  ];
  const done = () => {
    setSelected(new Map());
    list.reload();
  };
  return (
    <section aria-labelledby="indicators-h">
      <h1 id="indicators-h">Indicators</h1>
      <FilterForm
        label="Filter indicators"
        onApply={() => {
          // Filters that apply to IPv4 only are dropped for other kinds rather than refused.
          const q = compact(draft);
          if (q.kind !== 'ipv4') for (const k of ['source', 'country', 'asn']) delete q[k];
          setSelected(new Map());
          setQuery(q);
        }}
      >
        <Select label="Kind" value={draft.kind!} onChange={set('kind')} options={KINDS.map((k) => [k, k])} />
        <Select label="Score band" value={draft.band!} onChange={set('band')} options={[['', 'any'], ['low', 'LOW'], ['medium', 'MEDIUM'], ['high', 'HIGH'], ['critical', 'CRITICAL']]} />
        <Field label="Live score from" name="min_score" type="number" value={draft.min_score!} onInput={set('min_score')} />
        <Field label="Live score to" name="max_score" type="number" value={draft.max_score!} onInput={set('max_score')} />
        <Select label="Your decision" value={draft.decision!} onChange={set('decision')} options={[['', 'any'], ['none', 'none'], ['0', 'Whitelist'], ['1', 'Blacklist']]} />
        {ipv4 && <Field label="Source" name="source" value={draft.source!} onInput={set('source')} />}
        <Field label="Tag" name="tag" value={draft.tag!} onInput={set('tag')} />
        <Field label="Reported by (organization gid)" name="reporter" value={draft.reporter!} onInput={set('reporter')} />
        {ipv4 && <Field label="Country (two letters)" name="country" value={draft.country!} onInput={set('country')} />}
        {ipv4 && <Field label="AS number" name="asn" value={draft.asn!} onInput={set('asn')} />}
        <Field label="Contains" name="q" value={draft.q!} onInput={set('q')} />
      </FilterForm>
      <div class="actions">
        <ExportButton
          name={`indicators-${query.kind ?? 'ipv4'}.csv`}
          walk={() => api.client.indicators({ ...(query as Partial<IndicatorListQuery>), page_size: 500 })}
          columns={[
            ['kind', (r: IndicatorItem) => r.kind],
            ['value', (r) => r.value],
            ['live_score', (r) => r.live_score],
            ['score', (r) => r.score],
            ['ts', (r) => new Date(r.ts * 1000).toISOString()],
            ['members', (r) => r.members],
            ['events', (r) => r.events],
            ['sources', (r) => r.sources],
            ['tags', (r) => r.tags],
            ['country', (r) => r.country],
            ['asn', (r) => r.asn],
            ['decision', (r) => r.decision],
          ]}
        />
      </div>
      <BulkActions session={session} selected={[...selected.values()]} onDone={done} />
      {list.error && <Notice kind="error">{list.error}</Notice>}
      {!list.data ? <Loading loading={list.loading} /> : <SelectableTable label="Indicators" rows={list.data.items} columns={columns} selected={selected} setSelected={setSelected} selectable={canContribute(session)} />}
      <Pager pageNumber={list.pageNumber} hasNext={Boolean(list.data?.next_page)} previous={list.previous} next={list.next} />
    </section>
  );
}
