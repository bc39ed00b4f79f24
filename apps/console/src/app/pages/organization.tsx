import { useEffect, useMemo, useState } from 'preact/hooks';
import { z } from 'zod';
import { Ipv4OrNetwork, OrganizationConfig, OrganizationConfigUpdate, SettingsHistoryEntry } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Field, History, Loading, Notice, Switch, useId, useLoad } from '../components.tsx';
import { isAdmin, type Session } from '../session.ts';
import { errorsByPath } from './agent.tsx';

type Config = z.input<typeof OrganizationConfig> & { live: Record<string, unknown> };
const BANDS = ['low_score', 'medium_score', 'high_score', 'critical_score'] as const;
const TEXT = ['index_name', 'score_name', 'elastic_url', 'action_name', 'date_time_name'] as const;
const LISTS = ['allow_value', 'deny_value', 'device_name', 'direction_name', 'service_name'] as const;

/** The lines of the reserved-IP editor that are not an IPv4 address or network, with their line numbers. */
export function invalidCidrLines(text: string): Array<{ line: number; value: string }> {
  return text
    .split('\n')
    .map((value, i) => ({ line: i + 1, value: value.trim() }))
    .filter((l) => l.value !== '' && !Ipv4OrNetwork.safeParse(l.value).success);
}

function CidrEditor({ value, onChange, disabled, error }: { value: string; onChange: (v: string) => void; disabled: boolean; error?: string | undefined }) {
  const id = useId('cidr');
  const bad = invalidCidrLines(value);
  const message = bad.length > 0 ? `Not an IPv4 address or network: ${bad.map((b) => `line ${b.line} "${b.value}"`).join(', ')}` : error;
  return (
    <div class={`field${message ? ' invalid' : ''}`}>
      <label for={id}>reserved_ips (one address or CIDR network per line)</label>
      <textarea id={id} name="reserved_ips" rows={6} value={value} disabled={disabled} aria-invalid={message ? 'true' : undefined} aria-describedby={`${id}-msg`} onInput={(e) => onChange((e.target as HTMLTextAreaElement).value)} />
      <small id={`${id}-msg`} class={message ? 'error-text' : ''}>
        {message ?? 'Your own addresses: never reportable by your organization and never blockable in its feeds.'}
      </small>
    </div>
  );
}

export function OrganizationPage({ session }: { session: Session }) {
  // Non-admins see why, and the page does not ask the API for what it would refuse.
  if (!isAdmin(session)) return <Notice kind="info">Organization settings are edited by organization admins.</Notice>;
  return <OrganizationPageAdmin session={session} />;
}

function OrganizationPageAdmin({ session }: { session: Session }) {
  const { api } = session;
  const state = useLoad(async () => {
    const [config, history] = await Promise.all([
      api.get('/organization/config', OrganizationConfig),
      api.get('/organization/config/history', z.array(SettingsHistoryEntry)).catch(() => undefined),
    ]);
    return { config: config as Config, history };
  });
  const [draft, setDraft] = useState<Config>();
  const [reserved, setReserved] = useState('');
  const [rule, setRule] = useState({ on: false, score: '0', tags: '' });
  const [serverErrors, setServerErrors] = useState<Record<string, string>>({});
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string }>();
  useEffect(() => {
    if (!state.data) return;
    const c = state.data.config;
    setDraft(structuredClone(c));
    setReserved((c.reserved_ips ?? []).join('\n'));
    setRule({ on: Boolean(c.blocking_roule), score: String(c.blocking_roule?.score ?? 0), tags: (c.blocking_roule?.tags ?? []).join(', ') });
  }, [state.data]);

  const candidate = useMemo(() => {
    if (!draft) return undefined;
    const doc: Record<string, unknown> = {
      live: draft.live,
      // Kept as loaded unless edited below: a save never resets the default for new agents.
      agent_defaults: draft.agent_defaults,
      reserved_ips: reserved.split('\n').map((l) => l.trim()).filter((l) => l !== ''),
    };
    if (rule.on) doc.blocking_roule = { score: Number(rule.score), tags: rule.tags.split(',').map((t) => t.trim()).filter((t) => t !== '') };
    return doc;
  }, [draft, reserved, rule]);
  // The server's own rule (bands may touch, not overlap), checked here before asking it.
  const check = candidate ? OrganizationConfigUpdate.safeParse(candidate) : undefined;
  const unchanged = Boolean(check?.success && state.data && JSON.stringify(check.data) === JSON.stringify(OrganizationConfig.parse(state.data.config)));
  const errors = { ...serverErrors, ...(check && !check.success ? errorsByPath(check.error.issues) : {}) };
  const invalidReserved = invalidCidrLines(reserved).length > 0;

  if (!state.data || !draft) return <Loading {...state} />;
  const setLive = (key: string, value: unknown) => {
    setServerErrors({});
    setNotice(undefined);
    setDraft({ ...draft, live: { ...draft.live, [key]: value } });
  };

  async function save(e: Event) {
    e.preventDefault();
    if (!check?.success || invalidReserved || unchanged) return;
    try {
      await api.send('PUT', '/organization/config', candidate);
      setNotice({ kind: 'ok', text: 'Saved.' });
      state.reload();
    } catch (err) {
      const d = describeError(err);
      setServerErrors(d.fields);
      setNotice({ kind: 'error', text: d.message });
    }
  }

  return (
    <section aria-labelledby="org-h">
      <h1 id="org-h">Organization settings</h1>
      <form onSubmit={save} aria-label="Organization settings" noValidate>
        <h2>Score bands</h2>
        <div class="grid">
          {BANDS.map((band) => {
            const [min, max] = (draft.live[band] as [number, number] | undefined) ?? [0, 0];
            return (
              <fieldset key={band} class="band">
                <legend>{band.replace('_score', '').toUpperCase()}</legend>
                <Field label={`${band} min`} type="number" value={String(min)} error={errors[`live.${band}.0`] ?? errors[`live.${band}`]} onInput={(v) => setLive(band, [Number(v), max])} />
                <Field label={`${band} max`} type="number" value={String(max)} error={errors[`live.${band}.1`]} onInput={(v) => setLive(band, [min, Number(v)])} />
              </fieldset>
            );
          })}
        </div>
        <h2>Live page field names</h2>
        <div class="grid">
          {TEXT.map((k) => (
            <Field key={k} label={k} value={String(draft.live[k] ?? '')} error={errors[`live.${k}`]} onInput={(v) => setLive(k, v)} />
          ))}
          {LISTS.map((k) => (
            <Field key={k} label={`${k} (comma-separated)`} value={((draft.live[k] as string[] | undefined) ?? []).join(', ')} error={errors[`live.${k}`]} onInput={(v) => setLive(k, v.split(',').map((s) => s.trim()).filter((s) => s !== ''))} />
          ))}
        </div>
        <h2>New agents</h2>
        <Field
          label="score_threshold offered to a new agent"
          type="number"
          value={String(draft.agent_defaults?.score_threshold ?? '')}
          error={errors['agent_defaults.score_threshold']}
          onInput={(v) => {
            setServerErrors({});
            setNotice(undefined);
            setDraft({ ...draft, agent_defaults: { ...draft.agent_defaults, score_threshold: Number(v) } });
          }}
        />
        <h2>Reserved addresses</h2>
        <CidrEditor value={reserved} onChange={(v) => { setReserved(v); setNotice(undefined); }} disabled={false} error={Object.entries(errors).find(([k]) => k.startsWith('reserved_ips'))?.[1]} />
        <h2>Blocking rule</h2>
        <Switch label="Also block indicators that carry one of these tags at or above this score" checked={rule.on} onChange={(on) => setRule({ ...rule, on })} />
        {rule.on && (
          <div class="grid">
            <Field label="blocking_roule score" type="number" value={rule.score} error={errors['blocking_roule.score']} onInput={(score) => setRule({ ...rule, score })} />
            <Field label="blocking_roule tags (comma-separated)" value={rule.tags} error={errors['blocking_roule.tags']} onInput={(tags) => setRule({ ...rule, tags })} />
          </div>
        )}
        {notice && <Notice kind={notice.kind}>{notice.text}</Notice>}
        <div class="actions">
          <button type="submit" disabled={!check?.success || invalidReserved || unchanged}>
            Save
          </button>
          {unchanged && !notice && <span class="muted">No changes to save.</span>}
        </div>
      </form>
      <History entries={state.data.history} />
    </section>
  );
}
