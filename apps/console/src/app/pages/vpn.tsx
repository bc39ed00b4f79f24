import { useState } from 'preact/hooks';
import { z } from 'zod';
import { VpnLicense, VpnLicenseDetail } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Confirm, Field, Loading, Notice, formatTime, useLoad } from '../components.tsx';
import { isAdmin, type Session } from '../session.ts';

const LicenseDetail = VpnLicenseDetail;
type Detail = z.infer<typeof LicenseDetail>;

/** The wg-quick client configuration of a license answer (`installation.config`). */
export function clientConfigOf(detail: Record<string, unknown>): string | undefined {
  const config = (detail.installation as { config?: unknown } | null | undefined)?.config;
  return typeof config === 'string' ? config : undefined;
}

/**
 * A wg-quick configuration file name: the interface name is the file name without `.conf`, at
 * most 15 characters of [a-zA-Z0-9_=+.-] (wg-quick refuses any other), else `rampart`.
 */
export function wgConfigName(wanted: string | undefined): string {
  const name = (wanted ?? '').replace(/[^a-zA-Z0-9_=+.-]/g, '').slice(0, 15);
  return `${name || 'rampart'}.conf`;
}

function ConfigBox({ text, name }: { text: string; name: string | undefined }) {
  const [copied, setCopied] = useState(false);
  const href = `data:text/plain;charset=utf-8,${encodeURIComponent(text)}`;
  const file = wgConfigName(name);
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
        <a class="button secondary" href={href} download={file}>
          Download {file}
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
  const [created, setCreated] = useState<{ vid: string; config?: string | undefined; iface?: string | undefined }>();
  const [open, setOpen] = useState<Detail>();
  const [confirming, setConfirming] = useState<string>();

  async function create(e: Event) {
    e.preventDefault();
    setError(undefined);
    setFieldErrors({});
    try {
      // POST /vpn answers with no body (spec 4.6); the new license is named by its Location header.
      const raw = await api.client.transport.request('POST', '/vpn', { body: { account_name: account.trim(), ...(notes.trim() ? { notes: notes.trim() } : {}) }, retries: 0 });
      const vid = decodeURIComponent(raw.headers.get('location')?.split('/').pop() ?? '');
      const detail = vid ? await api.get(`/vpn/${vid}`, LicenseDetail) : undefined;
      setCreated({ vid, config: detail && clientConfigOf(detail), iface: detail?.installation?.interface });
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
              <p>This client configuration holds the license's private key: copy or download it and keep it safe. Organization admins can open it again from the list.</p>
              <ConfigBox text={created.config} name={created.iface} />
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
                  <td>{formatTime(l.ts)}</td>
                  <td>{l.user.username}</td>
                  <td class="actions">
                    <button type="button" class="secondary" onClick={() => void api.get(`/vpn/${l.vid}`, LicenseDetail).then(setOpen, (err: unknown) => setError(describeError(err).message))}>
                      Instructions
                    </button>
                    {admin &&
                      (confirming === l.vid ? (
                        <Confirm label="Confirm deactivation" yes="Yes, deactivate" onYes={() => void deactivate(l.vid)} onCancel={() => setConfirming(undefined)} />
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
  const inst = detail.installation;
  if (!inst) return <p>This license is deactivated: its key was destroyed.</p>;
  return (
    <>
      <p>
        Tunnel address {inst.address}, server {inst.endpoint}. {inst.private_key_shown ? '' : 'The private key is masked: only organization admins see it.'}
      </p>
      <h3>Client configuration ({wgConfigName(inst.interface)})</h3>
      <ConfigBox text={inst.config} name={inst.interface} />
      <h3>Commands</h3>
      <pre tabIndex={0}>{inst.commands.join('\n')}</pre>
      <h3>For the VPN server operator</h3>
      <pre tabIndex={0}>{inst.server_peer}</pre>
    </>
  );
}
