import { useState } from 'preact/hooks';
import { z } from 'zod';
import { ApiKeyCreated, ApiKeyInfo } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Confirm, Field, Loading, Notice, formatTime, useLoad } from '../components.tsx';
import { isAdmin, type Session } from '../session.ts';

export function KeysPage({ session, onSignOut }: { session: Session; onSignOut: (why: string) => void }) {
  // Non-admins see why, and the page does not ask the API for what it would refuse.
  if (!isAdmin(session)) return <Notice kind="info">API keys are managed by organization admins.</Notice>;
  return <KeysPageAdmin session={session} onSignOut={onSignOut} />;
}

function KeysPageAdmin({ session, onSignOut }: { session: Session; onSignOut: (why: string) => void }) {
  const { api } = session;
  const list = useLoad(() => api.get('/keys', z.array(ApiKeyInfo)));
  const [username, setUsername] = useState('');
  const [label, setLabel] = useState('');
  const [issued, setIssued] = useState<z.infer<typeof ApiKeyCreated>>();
  const [error, setError] = useState<string>();
  const [fields, setFields] = useState<Record<string, string>>({});
  const [confirming, setConfirming] = useState<string>();
  // The outcome of the last revocation (where focus goes after the confirmation).
  const [revoked, setRevoked] = useState<string>();
  // The id of the key this tab is signed in with (`rmp_<key_id>_<secret>`).
  const inUse = /rmp_([0-9a-f]{12})_/.exec(api.key)?.[1];

  async function create(e: Event) {
    e.preventDefault();
    setError(undefined);
    setFields({});
    try {
      setIssued(await api.send('POST', '/keys', { ...(username.trim() ? { username: username.trim() } : {}), label: label.trim() }, ApiKeyCreated));
      setLabel('');
      list.reload();
    } catch (err) {
      const d = describeError(err);
      setFields(d.fields);
      setError(d.message);
    }
  }
  async function revoke(keyId: string) {
    setError(undefined);
    setRevoked(undefined);
    try {
      await api.send('DELETE', `/keys/${keyId}`, undefined);
      setRevoked(keyId);
      setConfirming(undefined);
      if (keyId === inUse) {
        // This tab's key no longer works: straight to the sign-in form, asking the API nothing more
        // (a page opened with the revoked key would only be refused).
        onSignOut('Signed out: you revoked the key this session used.');
        return;
      }
      list.reload();
    } catch (err) {
      setError(describeError(err).message);
    }
  }
  return (
    <section aria-labelledby="keys-h">
      <h1 id="keys-h">API keys</h1>
      <form class="card" onSubmit={create} aria-label="New API key">
        <h2>New key</h2>
        <Field label="username (empty: you)" name="username" value={username} error={fields.username} onInput={setUsername} />
        <Field label="label" name="label" value={label} error={fields.label} onInput={setLabel} />
        <button type="submit">Create key</button>
      </form>
      {error && <Notice kind="error">{error}</Notice>}
      {revoked && <Notice kind="ok">Key {revoked} revoked: programs using it are refused from now on.</Notice>}
      {issued && (
        <Notice kind="ok">
          Key for {issued.username} (shown only now): <code data-testid="new-key">{issued.key}</code>
        </Notice>
      )}
      {!list.data ? (
        <Loading {...list} />
      ) : (
        <div class="table-wrap">
          <table aria-label="Keys">
            <thead>
              <tr>
                <th scope="col">Key id</th>
                <th scope="col">User</th>
                <th scope="col">Label</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {list.data.map((k) => (
                <tr key={k.key_id} data-key-id={k.key_id}>
                  <td>
                    <code>{k.key_id}</code>
                    {k.key_id === inUse && <span class="badge warn">this session</span>}
                  </td>
                  <td>{k.username}</td>
                  <td>{k.label || '—'}</td>
                  <td>{k.last_used_at ? formatTime(k.last_used_at) : 'never'}</td>
                  <td>
                    {k.revoked_at || k.key_id === revoked ? (
                      k.revoked_at ? `revoked ${formatTime(k.revoked_at)}` : 'revoked'
                    ) : confirming === k.key_id ? (
                      <Confirm
                        label="Confirm revocation"
                        question={k.key_id === inUse ? 'This is the key you are signed in with: revoking it signs you out. Revoke?' : 'Revoke this key? Programs using it stop working.'}
                        yes="Yes, revoke"
                        onYes={() => void revoke(k.key_id)}
                        onCancel={() => setConfirming(undefined)}
                      />
                    ) : (
                      <button type="button" class="danger" onClick={() => setConfirming(k.key_id)}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
