import { useEffect, useMemo, useState } from 'preact/hooks';
import { z } from 'zod';
import { AGENT_CONFIG_SECRET_KEYS, AgentSettingsDocument, IdsEntries, IpsEntries, OverviewResponse, SECRET_MASK, SettingsHistoryEntry } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Field, History, Loading, Notice, Switch, useLoad } from '../components.tsx';
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

function Integration(props: {
  group: 'ids' | 'ips';
  label: string;
  schema: z.ZodType;
  entry: Record<string, unknown> | undefined;
  errors: Record<string, string>;
  disabled: boolean;
  onChange: (entry: Record<string, unknown>) => void;
}) {
  const { group, label, schema, entry, errors } = props;
  const active = entry?.active === true;
  const base = `${group}.${label}`;
  return (
    <fieldset class={`integration${active ? ' on' : ''}`} data-integration={base}>
      <legend>
        <Switch
          label={`${label} (${group === 'ips' ? 'enforcement' : 'detection'})`}
          checked={active}
          disabled={props.disabled}
          onChange={(on) => props.onChange(entry ? { ...entry, active: on } : (schema.parse({ active: on }) as Record<string, unknown>))}
        />
      </legend>
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
    const [doc, history, overview] = await Promise.all([
      api.get(path, AgentSettingsDocument),
      api.get(`${path}/history`, z.array(SettingsHistoryEntry)).catch(() => undefined),
      api.get('/overview', OverviewResponse).catch(() => undefined),
    ]);
    return { doc: doc as Doc, history, overview };
  }, [gaid]);
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
    if (!check?.success) return;
    setSaving(true);
    try {
      await api.send('PUT', path, draft);
      setNotice({ kind: 'ok', text: 'Saved. Connected agents receive the change now.' });
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
            <Integration key={label} group="ips" label={label} schema={schema} entry={draft.ips?.[label]} errors={errors} disabled={!admin} onChange={(entry) => setEntry('ips', label, entry)} />
          ))}
        </div>
        <h2>Detection (ids)</h2>
        <div class="integrations">
          {Object.entries(IdsEntries).map(([label, schema]) => (
            <Integration key={label} group="ids" label={label} schema={schema} entry={draft.ids?.[label]} errors={errors} disabled={!admin} onChange={(entry) => setEntry('ids', label, entry)} />
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
      <History entries={state.data.history} />
    </section>
  );
}
