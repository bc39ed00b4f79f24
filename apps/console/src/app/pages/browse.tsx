import { useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { DecisionListResponse, IndicatorListResponse, type DecisionItem, type DecisionListQuery, type IndicatorItem, type IndicatorListQuery } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Field, Loading, Notice, Select, Time, formatTime, useLoad } from '../components.tsx';
import { canContribute, type Session } from '../session.ts';
import type { IndicatorKind } from '../indicator-kind.ts';
import { setDecision } from '../decide.ts';
import { NewDecision } from './new-decision.tsx';
import { ExportButton, IndicatorLink, Pager, SelectableTable, type Column, type Row } from './browse-table.tsx';
const KINDS: IndicatorKind[] = ['ipv4', 'domain', 'url', 'file'];
const DECISION_LABEL: Record<string, string> = { '0': 'Whitelist', '1': 'Blacklist', null: '—' };

type Query = Record<string, string>;
const compact = (q: Query): Query => Object.fromEntries(Object.entries(q).filter(([, v]) => v.trim() !== '').map(([k, v]) => [k, v.trim()]));

/**
 * Pages over a cursor list: the cursors of the pages before this one are kept, so Previous works
 * without the API paging backwards.
 */
function useCursorPages<T>(load: (query: Query, page: string | undefined) => Promise<{ items: T[]; next_page: string | null }>, query: Query) {
  // Each earlier page: its cursor and the rows before it (for the totals line).
  const [stack, setStack] = useState<Array<{ cursor: string; before: number }>>([]);
  const [version, setVersion] = useState(0);
  const key = JSON.stringify(query);
  const lastKey = useRef(key);
  if (lastKey.current !== key) {
    lastKey.current = key;
    if (stack.length > 0) setStack([]);
  }
  const page = stack.at(-1)?.cursor;
  const before = stack.at(-1)?.before ?? 0;
  const res = useLoad(() => load(query, page), [key, page, version]);
  return {
    ...res,
    pageNumber: stack.length + 1,
    before,
    next: () => res.data?.next_page && setStack([...stack, { cursor: res.data.next_page, before: before + res.data.items.length }]),
    previous: () => setStack(stack.slice(0, -1)),
    reload: () => setVersion((v) => v + 1),
  };
}

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

const score = (n: number | null) => (n === null ? '—' : n.toFixed(1));

export function DecisionsPage({ session }: { session: Session }) {
  const { api } = session;
  const [draft, setDraft] = useState<Query>({ kind: '', decision: '', q: '' });
  const [query, setQuery] = useState<Query>({});
  const [selected, setSelected] = useState(new Map<string, DecisionItem>());
  const list = useCursorPages((q, page) => api.get('/decisions', DecisionListResponse, { ...q, ...(page ? { page } : {}) }), query);
  const set = (k: string) => (v: string) => setDraft({ ...draft, [k]: v });
  const columns: Array<Column<DecisionItem>> = [
    ['Indicator', (r) => <IndicatorLink kind={r.kind} value={r.value} />, (r) => r.value],
    ['Kind', (r) => r.kind, (r) => r.kind],
    ['Decision', (r) => `${DECISION_LABEL[String(r.decision)]}${r.ttl ? ` until ${formatTime(r.ttl)}` : ''}${r.expired ? ' (expired)' : ''}`, (r) => DECISION_LABEL[String(r.decision)]],
    ['Held', (r) => (r.held ? 'yes' : 'no: nobody reported it'), (r) => (r.held ? 'yes' : 'no')],
    ['Live score', (r) => score(r.live_score), (r) => r.live_score],
    ['Set', (r) => <Time at={r.updated_at} />, (r) => r.updated_at],
    ['Set by', (r) => r.set_by ?? '—', (r) => r.set_by],
    ['Reason', (r) => r.reason ?? '—', (r) => r.reason],
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
      {!list.data ? <Loading loading={list.loading} /> : <SelectableTable label="Decisions" rows={list.data.items} columns={columns} selected={selected} setSelected={setSelected} selectable={canContribute(session)} before={list.before} hasNext={Boolean(list.data.next_page)} />}
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
  const tags = (r: IndicatorItem) => [...r.sources, ...r.tags].join(', ');
  const place = (r: IndicatorItem) => [r.country, r.asn].filter(Boolean).join(' · ');
  const columns: Array<Column<IndicatorItem>> = [
    ['Indicator', (r) => <IndicatorLink kind={r.kind} value={r.value} />, (r) => r.value],
    ['Live score', (r) => score(r.live_score), (r) => r.live_score],
    ['Score at ts', (r) => r.score, (r) => r.score],
    ['Reporters', (r) => r.members, (r) => r.members],
    ['Reports', (r) => r.events, (r) => r.events],
    [query.kind === 'ipv4' ? 'Sources / tags' : 'Tags', (r) => tags(r) || '—', tags],
    ...(query.kind === 'ipv4' ? ([['Country / AS', (r: IndicatorItem) => place(r) || '—', place]] as Array<Column<IndicatorItem>>) : []),
    ['Your decision', (r) => `${DECISION_LABEL[String(r.decision)]}${r.ttl ? ` until ${formatTime(r.ttl)}` : ''}`, (r) => DECISION_LABEL[String(r.decision)]],
    ['Last update', (r) => <Time at={r.ts} />, (r) => r.ts],
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
      {!list.data ? <Loading loading={list.loading} /> : <SelectableTable label="Indicators" rows={list.data.items} columns={columns} selected={selected} setSelected={setSelected} selectable={canContribute(session)} before={list.before} hasNext={Boolean(list.data.next_page)} />}
      <Pager pageNumber={list.pageNumber} hasNext={Boolean(list.data?.next_page)} previous={list.previous} next={list.next} />
    </section>
  );
}
