import { useState } from 'preact/hooks';
import { z } from 'zod';
import { VpnLicense } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Field, Loading, Notice, useLoad } from '../components.tsx';
import { isAdmin, type Session } from '../session.ts';

/** Whatever the server adds to a license for its installation (config text, commands). */
const LicenseDetail = VpnLicense.loose();
type Detail = z.infer<typeof LicenseDetail>;

/** The wg-quick client configuration inside a license answer, wherever the server put it. */
export function clientConfigOf(detail: Record<string, unknown>): string | undefined {
  for (const key of ['client_config', 'config', 'wg_quick_config']) if (typeof detail[key] === 'string') return detail[key] as string;
  const instructions = detail.instructions as Record<string, unknown> | string | undefined;
  if (typeof instructions === 'string') return instructions.includes('[Interface]') ? instructions : undefined;
  if (instructions && typeof instructions === 'object') return clientConfigOf(instructions);
  return undefined;
}

function ConfigBox({ text, name }: { text: string; name: string }) {
  const [copied, setCopied] = useState(false);
  const href = `data:text/plain;charset=utf-8,${encodeURIComponent(text)}`;
  return (
    <div class="config-box">
      <pre data-testid="vpn-config" tabIndex={0}>{text}</pre>
      <div class="actions">
        <button
          type="button"
          onClick={() =>
            void navigator.clipboard?.writeText(text).then(
              () => setCopied(true),
              () => setCopied(false),
            )
          }
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <a class="button secondary" href={href} download={`${name}.conf`}>
          Download {name}.conf
        </a>
      </div>
    </div>
  );
}

export function VpnPage({ session }: { session: Session }) {
  const { api } = session;
  const admin = isAdmin(session);
  const list = useLoad(() => api.get('/vpn', z.array(VpnLicense)));
  const [account, setAccount] = useState('');
  const [notes, setNotes] = useState('');
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [error, setError] = useState<string>();
  const [created, setCreated] = useState<{ vid: string; config?: string | undefined }>();
  const [open, setOpen] = useState<Detail>();
  const [confirming, setConfirming] = useState<string>();

  async function create(e: Event) {
    e.preventDefault();
    setError(undefined);
    setFieldErrors({});
    try {
      const before = new Set((list.data ?? []).map((l) => l.vid));
      const answer = (await api.send('POST', '/vpn', { account_name: account.trim(), ...(notes.trim() ? { notes: notes.trim() } : {}) }, LicenseDetail)) as Detail | undefined;
      let vid = answer?.vid;
      let config = answer ? clientConfigOf(answer) : undefined;
      if (!vid) vid = (await api.get('/vpn', z.array(VpnLicense))).find((l) => !before.has(l.vid))?.vid;
      if (vid && !config) config = clientConfigOf(await api.get(`/vpn/${vid}`, LicenseDetail));
      setCreated({ vid: vid ?? '', config });
      setAccount('');
      setNotes('');
      list.reload();
      await session.refreshMe?.();
    } catch (err) {
      const d = describeError(err);
      setFieldErrors(d.fields);
      setError(d.message);
    }
  }

  async function deactivate(vid: string) {
    setError(undefined);
    try {
      await api.send('DELETE', `/vpn/${vid}`, undefined);
      setConfirming(undefined);
      if (open?.vid === vid) setOpen(undefined);
      list.reload();
    } catch (err) {
      setError(describeError(err).message);
    }
  }

  return (
    <section aria-labelledby="vpn-h">
      <h1 id="vpn-h">Secure VPN</h1>
      {admin && (
        <form class="card" onSubmit={create} aria-label="New license">
          <h2>New license</h2>
          <Field label="account_name" name="account_name" value={account} error={fieldErrors.account_name} onInput={setAccount} />
          <Field label="notes" name="notes" value={notes} error={fieldErrors.notes} onInput={setNotes} />
          <button type="submit" disabled={account.trim() === ''}>
            Create license
          </button>
        </form>
      )}
      {error && <Notice kind="error">{error}</Notice>}
      {created && (
        <article class="card" aria-label="New license configuration">
          <h2>License {created.vid} created</h2>
          {created.config ? (
            <>
              <p>This client configuration holds the private key and is shown only now: copy or download it.</p>
              <ConfigBox text={created.config} name={created.vid} />
            </>
          ) : (
            <p>Open the license below for its installation instructions.</p>
          )}
        </article>
      )}
      {!list.data ? (
        <Loading {...list} />
      ) : list.data.length === 0 ? (
        <p>No active license.</p>
      ) : (
        <div class="table-wrap">
          <table aria-label="Active licenses">
            <thead>
              <tr>
                <th scope="col">License</th>
                <th scope="col">Account</th>
                <th scope="col">Created</th>
                <th scope="col">By</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.map((l) => (
                <tr key={l.vid} data-vid={l.vid}>
                  <td>{l.vid}</td>
                  <td>{l.account_name}</td>
                  <td>{new Date(l.ts * 1000).toLocaleString()}</td>
                  <td>{l.user.username}</td>
                  <td class="actions">
                    <button type="button" class="secondary" onClick={() => void api.get(`/vpn/${l.vid}`, LicenseDetail).then(setOpen, (err: unknown) => setError(describeError(err).message))}>
                      Instructions
                    </button>
                    {admin &&
                      (confirming === l.vid ? (
                        <span role="group" aria-label="Confirm deactivation">
                          <button type="button" class="danger" onClick={() => void deactivate(l.vid)}>
                            Yes, deactivate
                          </button>
                          <button type="button" class="secondary" onClick={() => setConfirming(undefined)}>
                            Cancel
                          </button>
                        </span>
                      ) : (
                        <button type="button" class="danger" onClick={() => setConfirming(l.vid)}>
                          Deactivate
                        </button>
                      ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {open && (
        <article class="card wide" aria-label="Installation instructions">
          <h2>Installation: {open.vid}</h2>
          <Instructions detail={open} />
        </article>
      )}
    </section>
  );
}

function Instructions({ detail }: { detail: Detail }) {
  const extra = Object.entries(detail).filter(([k]) => !(k in VpnLicense.shape));
  if (extra.length === 0) return <p>No instructions were returned.</p>;
  return (
    <>
      {extra.map(([k, v]) =>
        typeof v === 'string' ? (
          <div key={k}>
            <h3>{k}</h3>
            <pre tabIndex={0}>{v}</pre>
          </div>
        ) : (
          <div key={k}>
            <h3>{k}</h3>
            <pre tabIndex={0}>{JSON.stringify(v, null, 2)}</pre>
          </div>
        ),
      )}
    </>
  );
}
