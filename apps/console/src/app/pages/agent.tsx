import { useEffect, useMemo, useState } from 'preact/hooks';
import { z } from 'zod';
import {
  AGENT_CONFIG_SECRET_KEYS,
  AgentSettingsDocument,
  AgentSummary,
  IdsEntries,
  IpsEntries,
  OverviewResponse,
  SECRET_MASK,
  SettingsHistoryEntry,
  type EnforcedByPlugin,
} from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Field, formatTime, History, Loading, Notice, Switch, useLoad } from '../components.tsx';
import { AgentKeys } from './agent-admin.tsx';
import { isAdmin, type Session } from '../session.ts';

type Doc = Record<string, unknown> & { ids?: Record<string, Record<string, unknown>>; ips?: Record<string, Record<string, unknown>> };
const SECRET_KEYS = new Set<string>(AGENT_CONFIG_SECRET_KEYS);

/** Dotted path → message, from a zod failure or a 400's `errors` (paths there start with `body.`). */
export function errorsByPath(issues: Array<{ path: PropertyKey[] | string; message: string }>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of issues) {
    const path = typeof i.path === 'string' ? i.path.replace(/^body\.?/, '') : i.path.map(String).join('.');
    out[path] ??= i.message;
  }
  return out;
}

/** How many indicators a threshold blocks today, from the live-score histogram. */
export function countAtOrAbove(histogram: number[], threshold: number): number {
  let n = 0;
  for (let s = Math.max(0, Math.ceil(threshold)); s < histogram.length; s++) n += histogram[s]!;
  return n;
}

function entryKeys(schema: z.ZodType): string[] {
  const shape = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape ?? {};
  return Object.keys(shape).filter((k) => k !== 'active');
}

/** What the agent reported for one `ips` label: the label's own entry and its `<label>/<kind>` instances. */
export function reportsOf(summary: AgentSummary | undefined, label: string): Array<[string, EnforcedByPlugin]> {
  return Object.entries(summary?.enforced ?? {})
    .filter(([name]) => name === label || name.startsWith(`${label}/`))
    .sort(([a], [b]) => a.localeCompare(b));
}

/** Whether this agent's build can run a label: null until it announced its capabilities. */
export function canRun(summary: AgentSummary | undefined, group: 'ids' | 'ips', label: string): boolean | null {
  const caps = summary?.capabilities;
  if (!caps) return null;
  return (group === 'ips' ? caps.enforcers : caps.sources).includes(label);
}

/** Active labels of a settings document that the agent announced it cannot run. */
export function unsupportedActive(doc: Doc, summary: AgentSummary | undefined): string[] {
  const out: string[] = [];
  for (const group of ['ips', 'ids'] as const) {
    for (const [label, entry] of Object.entries(doc[group] ?? {})) {
      if (entry?.active === true && canRun(summary, group, label) === false) out.push(`${group}.${label}`);
    }
  }
  return out;
}

function PluginReport({ name, report, since }: { name: string; report: EnforcedByPlugin; since: number | undefined }) {
  const stale = since !== undefined && report.at < since;
  const state = report.state ?? (report.healthy === false ? 'failed' : report.healthy ? 'ok' : null);
  return (
    <li data-report={name}>
      <span class={`badge ${state === 'ok' ? 'alive' : state === 'degraded' ? 'warn' : state === 'failed' ? 'dead' : ''}`}>{state ?? 'reported'}</span> {name}
      {report.enforced !== null && <> enforces {report.enforced.toLocaleString()}</>}
      {report.error && <> · {report.error}</>}
      {stale && <span class="muted"> (before the last save)</span>}
    </li>
  );
}

function Integration(props: {
  group: 'ids' | 'ips';
  label: string;
  schema: z.ZodType;
  entry: Record<string, unknown> | undefined;
  errors: Record<string, string>;
  disabled: boolean;
  onChange: (entry: Record<string, unknown>) => void;
  summary: AgentSummary | undefined;
  savedAt: number | undefined;
}) {
  const { group, label, schema, entry, errors, summary } = props;
  const active = entry?.active === true;
  const base = `${group}.${label}`;
  const runs = canRun(summary, group, label);
  const reports = group === 'ips' ? reportsOf(summary, label) : [];
  return (
    <fieldset class={`integration${active ? ' on' : ''}${runs === false ? ' unsupported' : ''}`} data-integration={base}>
      <legend>
        <Switch
          label={`${label} (${group === 'ips' ? 'enforcement' : 'detection'})`}
          checked={active}
          disabled={props.disabled}
          onChange={(on) => props.onChange(entry ? { ...entry, active: on } : (schema.parse({ active: on }) as Record<string, unknown>))}
        />
        {runs === false && (
          <span class="badge warn" title={`Agent ${summary?.capabilities?.version ?? ''} announced the integrations it can run; this is not one`}>
            not in this agent
          </span>
        )}
      </legend>
      {active && runs === false && (
        <p class="error-text" role="status">
          This agent ({summary?.capabilities?.version}) cannot run {label}: it refuses the entry and {group === 'ips' ? 'enforces nothing through it' : 'reads nothing from it'}.
        </p>
      )}
      {reports.length > 0 && (active || reports.some(([, r]) => r.state !== 'ok')) && (
        <ul class="plugin-reports" aria-label={`What the agent reports for ${label}`}>
          {reports.map(([name, report]) => (
            <PluginReport key={name} name={name} report={report} since={props.savedAt} />
          ))}
        </ul>
      )}
      {active &&
        entryKeys(schema).map((key) => {
          const value = entry?.[key];
          if (Array.isArray(value)) return <p class="muted" key={key}>{key}: {value.length} item(s), edited through the API.</p>;
          const secret = SECRET_KEYS.has(key);
          return (
            <Field
              key={key}
              label={key}
              name={`${base}.${key}`}
              type={secret ? 'password' : 'text'}
              value={value === null || value === undefined ? '' : String(value)}
              disabled={props.disabled}
              error={errors[`${base}.${key}`]}
              hint={secret && value === SECRET_MASK ? 'Stored; leave as is to keep it, or type a new one.' : undefined}
              onInput={(v) => props.onChange({ ...entry, [key]: v })}
            />
          );
        })}
      {errors[base] && <small class="error-text">{errors[base]}</small>}
    </fieldset>
  );
}

export function AgentPage({ session, gaid }: { session: Session; gaid: string }) {
  const path = `/agents/${encodeURIComponent(gaid)}/config`;
  const { api } = session;
  const admin = isAdmin(session);
  const state = useLoad(async () => {
    const [doc, history, overview, summary] = await Promise.all([
      api.get(path, AgentSettingsDocument),
      api.get(`${path}/history`, z.array(SettingsHistoryEntry)).catch(() => undefined),
      api.get('/overview', OverviewResponse).catch(() => undefined),
      loadSummary(),
    ]);
    return { doc: doc as Doc, history, overview, summary };
  }, [gaid]);
  async function loadSummary(): Promise<AgentSummary | undefined> {
    const all = await api.get('/agents', z.array(AgentSummary)).catch(() => undefined);
    return all?.find((a) => a.gaid === gaid);
  }
  // What the agent reports arrives after a save: the page asks again every 2 s for a minute.
  const [live, setLive] = useState<AgentSummary>();
  const [savedAt, setSavedAt] = useState<number>();
  useEffect(() => {
    if (savedAt === undefined) return;
    let stop = false;
    const tick = async () => {
      const next = await loadSummary();
      if (!stop && next) setLive(next);
    };
    const timer = setInterval(() => void tick(), 2000);
    const end = setTimeout(() => clearInterval(timer), 60_000);
    void tick();
    return () => {
      stop = true;
      clearInterval(timer);
      clearTimeout(end);
    };
  }, [savedAt, gaid]);
  const [draft, setDraft] = useState<Doc>();
  const [serverErrors, setServerErrors] = useState<Record<string, string>>({});
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string }>();
  const [saving, setSaving] = useState(false);
  useEffect(() => {
    if (state.data) setDraft(structuredClone(state.data.doc));
  }, [state.data]);

  const check = useMemo(() => (draft ? AgentSettingsDocument.safeParse(draft) : undefined), [draft]);
  const errors = { ...serverErrors, ...(check && !check.success ? errorsByPath(check.error.issues) : {}) };
  const dirty = draft && state.data ? JSON.stringify(draft) !== JSON.stringify(state.data.doc) : false;

  if (!state.data || !draft) return <Loading {...state} />;
  const summary = live ?? state.data.summary;
  const set = (patch: Partial<Doc>) => {
    setNotice(undefined);
    setServerErrors({});
    setDraft({ ...draft, ...patch });
  };
  const setEntry = (group: 'ids' | 'ips', label: string, entry: Record<string, unknown>) => set({ [group]: { ...(draft[group] ?? {}), [label]: entry } });
  const threshold = Number(draft.score_threshold);
  const wouldBlock = state.data.overview && Number.isFinite(threshold) ? countAtOrAbove(state.data.overview.ipv4.histogram, threshold) : undefined;

  async function save(e: Event) {
    e.preventDefault();
    if (!check?.success || !draft) return;
    setSaving(true);
    try {
      await api.send('PUT', path, draft);
      const refused = unsupportedActive(draft, summary);
      setNotice(
        refused.length === 0
          ? { kind: 'ok', text: 'Saved. Connected agents receive the change now; what each integration reports appears below it.' }
          : { kind: 'error', text: `Saved, but this agent cannot run ${refused.join(', ')}: it will refuse ${refused.length === 1 ? 'it' : 'them'} and enforce nothing there.` },
      );
      setSavedAt(Math.floor(Date.now() / 1000));
      state.reload();
    } catch (err) {
      const d = describeError(err);
      setServerErrors(d.fields);
      setNotice({ kind: 'error', text: d.message });
    } finally {
      setSaving(false);
    }
  }

  const num = (key: string, label: string, hint?: string) => (
    <Field label={label} name={key} type="number" value={String(draft[key] ?? '')} error={errors[key]} hint={hint} disabled={!admin} onInput={(v) => set({ [key]: v === '' ? '' : Number(v) })} />
  );
  return (
    <section aria-labelledby="agent-h">
      <h1 id="agent-h">Agent {gaid}</h1>
      <p class="muted" data-testid="agent-capabilities">
        {summary?.capabilities
          ? `Version ${summary.capabilities.version}: runs ${summary.capabilities.enforcers.length} enforcement and ${summary.capabilities.sources.length} detection integrations (${summary.capabilities.kinds.join(', ')}); the others are marked.`
          : 'The agent has not announced what it can run yet (it does on connecting); every integration is offered.'}
      </p>
      <EnforcementSummary summary={summary} histogram={state.data.overview?.ipv4.histogram} doc={state.data.doc} />
      {summary && <ReadBack summary={summary} />}
      <form onSubmit={save} aria-label="Agent settings" noValidate>
        <div class="grid">
          {num('score_threshold', 'score_threshold', wouldBlock === undefined ? undefined : `Would block ${wouldBlock.toLocaleString()} addresses today.`)}
          {num('sync_time', 'sync_time (minutes)')}
          {num('maximum_rules', 'maximum_rules')}
          <div class="field">
            <label for="running">running</label>
            <select id="running" name="running" value={String(draft.running ?? 'yes')} disabled={!admin} onChange={(e) => set({ running: (e.target as HTMLSelectElement).value })}>
              <option value="yes">yes: enforce and report</option>
              <option value="no">no: withdraw rules, keep checking in</option>
            </select>
          </div>
        </div>
        <h2>Enforcement (ips)</h2>
        <div class="integrations">
          {Object.entries(IpsEntries).map(([label, schema]) => (
            <Integration key={label} group="ips" label={label} schema={schema} entry={draft.ips?.[label]} errors={errors} disabled={!admin} onChange={(entry) => setEntry('ips', label, entry)} summary={summary} savedAt={savedAt} />
          ))}
        </div>
        <h2>Detection (ids)</h2>
        <div class="integrations">
          {Object.entries(IdsEntries).map(([label, schema]) => (
            <Integration key={label} group="ids" label={label} schema={schema} entry={draft.ids?.[label]} errors={errors} disabled={!admin} onChange={(entry) => setEntry('ids', label, entry)} summary={summary} savedAt={savedAt} />
          ))}
        </div>
        {check && !check.success && <Notice kind="error">Fix the highlighted fields before saving ({Object.keys(errors).join(', ')}).</Notice>}
        {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
        {admin && (
          <div class="actions">
            <button type="submit" disabled={saving || !dirty || !check?.success}>
              Save
            </button>
            <button type="button" class="secondary" disabled={!dirty} onClick={() => setDraft(structuredClone(state.data!.doc))}>
              Discard changes
            </button>
          </div>
        )}
      </form>
      {admin && summary && <AgentKeys session={session} gaid={gaid} active={summary.active} onChanged={state.reload} />}
      <History entries={state.data.history} />
    </section>
  );
}

/**
 * What the agent last said it enforces, per plugin, against what it should: the IPv4 addresses
 * the alliance holds at or above its saved threshold, cut at its maximum_rules.
 */
function EnforcementSummary({ summary, histogram, doc }: { summary: AgentSummary | undefined; histogram: number[] | undefined; doc: Doc }) {
  const reported = Object.entries(summary?.enforced ?? {});
  const threshold = Number(doc.score_threshold);
  const held = histogram && Number.isFinite(threshold) ? countAtOrAbove(histogram, threshold) : undefined;
  const should = held === undefined ? undefined : Math.min(held, Number(doc.maximum_rules));
  // The count is of IPv4 lists: enforcers of domains, URLs and digests (`<label>/<kind>`) are not compared.
  const short = should === undefined ? [] : reported.filter(([label, p]) => !label.includes('/') && p.enforced !== should).map(([label]) => label);
  return (
    <p data-testid="agent-enforcement">
      {reported.length === 0
        ? 'It has not reported what it enforces yet.'
        : `It last reported enforcing ${reported.map(([label, p]) => `${(p.enforced ?? 0).toLocaleString()} (${label})`).join(', ')}.`}{' '}
      {should !== undefined &&
        `It should enforce ${should.toLocaleString()} IPv4 addresses: ${held!.toLocaleString()} held at or above its threshold ${threshold}${should < held! ? `, cut to maximum_rules ${Number(doc.maximum_rules).toLocaleString()}` : ''}, before your decisions and reserved ranges.`}
      {short.length > 0 && (
        <>
          {' '}
          <span class="badge warn">differs: {short.join(', ')}</span>
        </>
      )}
    </p>
  );
}

/**
 * What each enforcer's target held when the agent last read it back, against what the server
 * expects of it (its list at the agent's threshold, capped as the agent is): drift, or a cut.
 */
function ReadBack({ summary }: { summary: AgentSummary }) {
  const attested = Object.entries(summary.enforced).filter(([, p]) => p.held !== null && p.server_expected !== null);
  if (attested.length === 0) return null;
  return (
    <div data-testid="agent-read-back">
      {summary.drifting && (
        <p class="error-text" role="status" data-testid="agent-drifting">
          Drifting since {formatTime(summary.drift_since)}: what its targets hold has differed from the server's list for longer than one sync interval plus one reconcile.
        </p>
      )}
      <ul aria-label="What its targets hold, read back">
        {attested.map(([name, p]) => (
          <li key={name} data-read-back={name}>
            <span class={`badge ${p.drifting ? 'dead' : p.drift_since !== null ? 'warn' : 'alive'}`}>{p.drifting ? 'drifting' : p.drift_since !== null ? 'differs' : 'holds the list'}</span> {name}: holds{' '}
            {p.held!.toLocaleString()}, the server expects {p.server_expected!.toLocaleString()} ({p.listed!.toLocaleString()} listed
            {p.cut ? `, ${p.cut.toLocaleString()} cut by maximum_rules or capacity` : ''}){p.drift_since !== null && <> · since {formatTime(p.drift_since)}</>}
          </li>
        ))}
      </ul>
    </div>
  );
}
