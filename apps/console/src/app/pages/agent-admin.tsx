import { useEffect, useState } from 'preact/hooks';
import { z } from 'zod';
import { AgentRegisterResponse, AgentTokenInfo, AgentTokenIssued, DEFAULT_AGENT_SCORE_THRESHOLD, DEFAULT_AUTH_HEADER, OrganizationConfig } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Confirm, Field, Loading, Notice, formatTime, useLoad } from '../components.tsx';
import type { Session } from '../session.ts';

/** A new agent's id: the spec's prefix and 8 random letters and digits. */
export function newAgentId(random: () => number = Math.random): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  let id = '';
  for (let i = 0; i < 8; i += 1) id += alphabet[Math.floor(random() * alphabet.length)];
  return `RMP-AGENT-ID-${id}`;
}

/** A key just issued, shown once, with what to write on the agent's host. */
export function IssuedAgentKey({ issued }: { issued: AgentTokenIssued }) {
  const header = issued.header.toLowerCase() === DEFAULT_AUTH_HEADER.toLowerCase() ? '' : `, "auth_name": "${issued.header}"`;
  return (
    // A block, not a Notice: a paragraph cannot hold the key's <pre>.
    <div class="notice ok" role="status">
      <p>
        Key <code>{issued.token_id}</code> for {issued.gaid} (shown only now{issued.expires_at ? `; expires ${formatTime(issued.expires_at)}` : ''}):
      </p>
      <pre class="secret" data-testid="new-agent-key">{issued.token}</pre>
      <p>
        On the agent's host, put it in <code>/etc/rampart-agent/agent.env</code> as <code>RAMPART_AGENT_KEY=…</code> and in the agent's configuration{' '}
        <code>
          "gaid": "{issued.gaid}", "api_jwt_key": "${'{'}RAMPART_AGENT_KEY{'}'}"{header}
        </code>
        , then restart the agent.
      </p>
    </div>
  );
}

/** Register an agent from the console, then issue its first key. */
export function RegisterAgentForm({ session, onRegistered }: { session: Session; onRegistered: () => void }) {
  const [gaid, setGaid] = useState(() => newAgentId());
  // The organization's default for new agents (settings `agent_defaults.score_threshold`), not a fixed figure.
  const [threshold, setThreshold] = useState(String(DEFAULT_AGENT_SCORE_THRESHOLD));
  useEffect(() => {
    let current = true;
    session.api
      .get('/organization/config', OrganizationConfig)
      .then((c) => {
        // Unless the admin already typed one.
        if (current) setThreshold((t) => (t === String(DEFAULT_AGENT_SCORE_THRESHOLD) ? String(c.agent_defaults.score_threshold) : t));
      })
      .catch(() => undefined);
    return () => {
      current = false;
    };
  }, [session.api]);
  const [syncTime, setSyncTime] = useState('5');
  const [maxRules, setMaxRules] = useState('10000');
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState<string>();
  const [issued, setIssued] = useState<AgentTokenIssued>();
  const [busy, setBusy] = useState(false);
  async function register(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    setFields({});
    try {
      const document = { gaid: gaid.trim(), ts: Date.now(), score_threshold: Number(threshold), start_from: 0, version: 'v0.0.0', proxy: 'LOCAL', sync_time: Number(syncTime), maximum_rules: Number(maxRules) };
      await session.api.send('POST', '/agents', document, AgentRegisterResponse);
      setIssued(await session.api.send('POST', `/agents/${encodeURIComponent(document.gaid)}/token`, {}, AgentTokenIssued));
      setGaid(newAgentId());
      onRegistered();
    } catch (err) {
      const d = describeError(err);
      setFields(d.fields);
      setError(d.message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <>
      <form class="card" onSubmit={(e) => void register(e)} aria-label="Register an agent" noValidate>
        <h2>Register an agent</h2>
        <p class="muted">Or on the host: <code>rampart-agent register</code>. Integrations are turned on on the agent's page once it is registered.</p>
        <div class="grid">
          <Field label="Agent id" name="gaid" value={gaid} error={fields.gaid} onInput={setGaid} />
          <Field label="score_threshold" name="score_threshold" type="number" value={threshold} error={fields.score_threshold} onInput={setThreshold} />
          <Field label="sync_time (minutes)" name="sync_time" type="number" value={syncTime} error={fields.sync_time} onInput={setSyncTime} />
          <Field label="maximum_rules" name="maximum_rules" type="number" value={maxRules} error={fields.maximum_rules} onInput={setMaxRules} />
        </div>
        <button type="submit" disabled={busy}>
          {busy ? 'Registering…' : 'Register and issue a key'}
        </button>
      </form>
      {error && <Notice kind="error">{error}</Notice>}
      {issued && <IssuedAgentKey issued={issued} />}
    </>
  );
}

/** An agent's keys (issue, revoke) and its deactivation. */
export function AgentKeys({ session, gaid, active, onChanged }: { session: Session; gaid: string; active: boolean; onChanged: () => void }) {
  const { api } = session;
  const path = `/agents/${encodeURIComponent(gaid)}`;
  const tokens = useLoad(() => api.get(`${path}/tokens`, z.array(AgentTokenInfo)), [gaid]);
  const [issued, setIssued] = useState<AgentTokenIssued>();
  const [ttlDays, setTtlDays] = useState('');
  const [confirming, setConfirming] = useState<string>();
  const [error, setError] = useState<string>();
  const [notice, setNotice] = useState<string>();
  async function act(what: () => Promise<void>) {
    setError(undefined);
    setNotice(undefined);
    try {
      await what();
      setConfirming(undefined);
      tokens.reload();
    } catch (err) {
      setError(describeError(err).message);
    }
  }
  const issue = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      setIssued(await api.send('POST', `${path}/token`, ttlDays.trim() ? { ttl_days: Number(ttlDays) } : {}, AgentTokenIssued));
      setTtlDays('');
    });
  };
  const revoke = (tokenId: string) =>
    act(async () => {
      await api.send('DELETE', `${path}/tokens/${encodeURIComponent(tokenId)}`, undefined);
      setNotice(`Key ${tokenId} revoked: the agent's connections with it are closed.`);
    });
  const deactivate = () =>
    act(async () => {
      await api.send('DELETE', path, undefined);
      setNotice(`${gaid} deactivated: none of its keys works any more; its record and settings are kept.`);
      onChanged();
    });
  return (
    <section class="card" aria-labelledby="agent-keys-h">
      <h2 id="agent-keys-h">Keys</h2>
      {error && <Notice kind="error">{error}</Notice>}
      {notice && <Notice kind="ok">{notice}</Notice>}
      {issued && <IssuedAgentKey issued={issued} />}
      {!tokens.data ? (
        <Loading {...tokens} />
      ) : (
        <TokenTable tokens={tokens.data} active={active} confirming={confirming} onConfirm={setConfirming} onRevoke={(id) => void revoke(id)} />
      )}
      {active ? (
        <>
          <form class="inline" onSubmit={issue} aria-label="Issue an agent key">
            <Field label="Expires after (days, empty: never)" name="ttl_days" type="number" value={ttlDays} onInput={setTtlDays} />
            <button type="submit">Issue a key</button>
          </form>
          <div class="actions">
            {confirming === 'agent' ? (
              <Confirm label="Confirm deactivation" question={`Deactivate ${gaid}? Every key it holds stops working at once; its record and settings are kept.`} yes="Yes, deactivate" onYes={() => void deactivate()} onCancel={() => setConfirming(undefined)} />
            ) : (
              <button type="button" class="danger" onClick={() => setConfirming('agent')}>
                Deactivate agent
              </button>
            )}
          </div>
        </>
      ) : (
        <p data-testid="agent-deactivated">
          <span class="badge dead">deactivated</span> Its keys no longer work; register a new agent to enforce on this host again.
        </p>
      )}
    </section>
  );
}

function TokenTable(props: { tokens: AgentTokenInfo[]; active: boolean; confirming: string | undefined; onConfirm: (id: string | undefined) => void; onRevoke: (id: string) => void }) {
  if (props.tokens.length === 0) return <p class="muted">This agent holds no key.</p>;
  return (
    <div class="table-wrap">
      <table aria-label="Agent keys" class="browse">
        <thead>
          <tr>
            <th scope="col">Key id</th>
            <th scope="col">Issued</th>
            <th scope="col">Expires</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {props.tokens.map((t) => (
            <tr key={t.token_id} data-token-id={t.token_id}>
              <td data-label="Key id" class="primary">
                <span class="value">{t.token_id}</span>
              </td>
              <td data-label="Issued">
                {formatTime(t.issued_at)}
                {t.issued_by && <div class="muted">by {t.issued_by}</div>}
              </td>
              <td data-label="Expires">{t.expires_at ? formatTime(t.expires_at) : 'never'}</td>
              <td data-label="State">
                {t.revoked ? (
                  'revoked'
                ) : props.confirming === t.token_id ? (
                  <Confirm label="Confirm revocation" question="Revoke this key? An agent using it is disconnected and refused." yes="Yes, revoke" onYes={() => props.onRevoke(t.token_id)} onCancel={() => props.onConfirm(undefined)} />
                ) : (
                  <button type="button" class="danger" disabled={!props.active} onClick={() => props.onConfirm(t.token_id)}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
