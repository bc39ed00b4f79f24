import { useState } from 'preact/hooks';
import { z } from 'zod';
import { ApiKeyInfo, AuditListResponse, OperatorOrganization, OperatorOrgListResponse, OperatorUser, ROLE } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { download } from '../csv.ts';
import { Field, Loading, Notice, Time, formatTime, useLoad } from '../components.tsx';
import { isAdmin, type Session } from '../session.ts';
import { totalsLabel } from '../table-logic.ts';

const ROLE_NAMES: Record<number, string> = { 1: 'reader', 2: 'contributor', 3: 'organization admin', 9: 'alliance operator' };

export const isOperator = (s: Session) => s.me.user.role >= ROLE.operator;

/** Runs one change at a time and says what came of it, with the failing fields of a 400. */
function useAction() {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string }>();
  const [fields, setFields] = useState<Record<string, string>>({});
  async function run(action: () => Promise<string>) {
    if (busy) return;
    setBusy(true);
    setMessage(undefined);
    setFields({});
    try {
      setMessage({ kind: 'ok', text: await action() });
    } catch (err) {
      const d = describeError(err);
      setFields(d.fields);
      setMessage({ kind: 'error', text: d.message });
    } finally {
      setBusy(false);
    }
  }
  return { busy, message, fields, run };
}

function CreateOrganization({ session, onDone }: { session: Session; onDone: () => void }) {
  const [draft, setDraft] = useState({ name: '', trust: '0.5', delay: '0', credits: '0' });
  const action = useAction();
  const set = (k: keyof typeof draft) => (v: string) => setDraft({ ...draft, [k]: v });
  return (
    <form
      class="card"
      aria-label="New organization"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => {
          const org = await session.api.send('POST', '/operator/organizations', { name: draft.name, trust: draft.trust, delay: draft.delay, credits: draft.credits }, OperatorOrganization);
          setDraft({ name: '', trust: '0.5', delay: '0', credits: '0' });
          onDone();
          return `Created ${org!.name} (${org!.gid}).`;
        });
      }}
    >
      <h2>New organization</h2>
      <div class="grid">
        <Field label="Name" name="name" value={draft.name} onInput={set('name')} error={action.fields.name} />
        <Field label="Trust (0 to 1)" name="trust" value={draft.trust} onInput={set('trust')} error={action.fields.trust} />
        <Field label="Delay (seconds)" name="delay" type="number" value={draft.delay} onInput={set('delay')} error={action.fields.delay} />
        <Field label="Coins" name="credits" type="number" value={draft.credits} onInput={set('credits')} error={action.fields.credits} />
      </div>
      <button type="submit" disabled={action.busy || draft.name.trim() === ''}>
        Create organization
      </button>
      {action.message && <Notice kind={action.message.kind}>{action.message.text}</Notice>}
    </form>
  );
}

/** The users and API keys of one organization (never a secret). */
function OrganizationMembers({ session, gid }: { session: Session; gid: string }) {
  const { api } = session;
  const users = useLoad(() => api.get(`/operator/organizations/${gid}/users`, z.array(OperatorUser)), [gid]);
  const keys = useLoad(() => api.get(`/operator/organizations/${gid}/keys`, z.array(ApiKeyInfo)), [gid]);
  return (
    <>
      <details>
        <summary>Users ({users.data?.length ?? '…'})</summary>
        {!users.data ? (
          <Loading {...users} />
        ) : (
          <ul>
            {users.data.map((u) => (
              <li key={u.guid}>
                {u.username} · {ROLE_NAMES[u.role] ?? `role ${u.role}`}
                {u.unsuccessful_login ? ` · ${u.unsuccessful_login} failed sign-ins` : ''}
              </li>
            ))}
          </ul>
        )}
      </details>
      <details>
        <summary>API keys ({keys.data?.length ?? '…'})</summary>
        {!keys.data ? (
          <Loading {...keys} />
        ) : (
          <ul>
            {keys.data.map((k) => (
              <li key={k.key_id}>
                <code>{k.key_id}</code> · {k.username} · {k.label || 'no label'} · last used {formatTime(k.last_used_at)}
                {k.revoked_at ? ` · revoked ${formatTime(k.revoked_at)}` : ''}
              </li>
            ))}
          </ul>
        )}
      </details>
    </>
  );
}

/** One organization: coins, trust and delay, its users and keys. */
function OrganizationCard({ session, org, onChanged }: { session: Session; org: z.infer<typeof OperatorOrganization>; onChanged: () => void }) {
  const { api } = session;
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const [trust, setTrust] = useState(String(org.trust));
  const [delay, setDelay] = useState(String(org.delay));
  const action = useAction();
  return (
    <article class="card" aria-label={`Organization ${org.name}`}>
      <h2>{org.name}</h2>
      <p class="muted">
        <code>{org.gid}</code> · balance <strong data-testid="balance">{org.balance.toLocaleString()}</strong> coins ({org.credit_tokens.toLocaleString()} granted, {org.debit_tokens.toLocaleString()} spent) · trust {org.trust} ·
        delay {org.delay} s · created {formatTime(org.created_at)}
      </p>
      <div class="grid">
        <form
          aria-label={`Grant coins to ${org.name}`}
          onSubmit={(e) => {
            e.preventDefault();
            void action.run(async () => {
              await api.send('POST', `/operator/organizations/${org.gid}/coins`, { amount, note }, OperatorOrganization);
              setAmount('');
              setNote('');
              onChanged();
              return `Granted ${Number(amount).toLocaleString()} coins to ${org.name}.`;
            });
          }}
        >
          <Field label="Coins to grant" name="amount" type="number" value={amount} onInput={setAmount} error={action.fields.amount} />
          <Field label="Why (kept in the audit log)" name="note" value={note} onInput={setNote} error={action.fields.note} />
          <button type="submit" disabled={action.busy || amount === ''}>
            Grant coins
          </button>
        </form>
        <form
          aria-label={`Trust and delay of ${org.name}`}
          onSubmit={(e) => {
            e.preventDefault();
            void action.run(async () => {
              await api.send('PATCH', `/operator/organizations/${org.gid}`, { trust, delay }, OperatorOrganization);
              onChanged();
              return `Saved trust ${trust} and delay ${delay} s for ${org.name}.`;
            });
          }}
        >
          <Field label="Trust (0 to 1)" name="trust" value={trust} onInput={setTrust} error={action.fields.trust} />
          <Field label="Delay (seconds)" name="delay" type="number" value={delay} onInput={setDelay} error={action.fields.delay} />
          <button type="submit" disabled={action.busy || (trust === String(org.trust) && delay === String(org.delay))}>
            Save trust and delay
          </button>
        </form>
      </div>
      {action.message && <Notice kind={action.message.kind}>{action.message.text}</Notice>}
      <OrganizationMembers session={session} gid={org.gid} />
    </article>
  );
}

export function OperatorsPage({ session }: { session: Session }) {
  if (!isOperator(session)) return <Notice kind="info">Organizations are managed by alliance operators.</Notice>;
  return <OperatorsPageOperator session={session} />;
}

function OperatorsPageOperator({ session }: { session: Session }) {
  const { api } = session;
  const [text, setText] = useState('');
  const [query, setQuery] = useState('');
  const [pages, setPages] = useState<string[]>([]);
  const [version, setVersion] = useState(0);
  const page = pages.at(-1);
  const list = useLoad(() => api.get('/operator/organizations', OperatorOrgListResponse, { ...(query ? { q: query } : {}), ...(page ? { page } : {}), page_size: 20 }), [query, page, version]);
  const reload = () => setVersion((v) => v + 1);
  return (
    <section aria-labelledby="operators-h">
      <h1 id="operators-h">Organizations</h1>
      <CreateOrganization session={session} onDone={reload} />
      <form
        class="inline"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setPages([]);
          setQuery(text.trim());
        }}
      >
        <Field label="Name contains" name="q" value={text} onInput={setText} />
        <button type="submit">Search</button>
      </form>
      {list.error && <Notice kind="error">{list.error}</Notice>}
      {!list.data ? <Loading loading={list.loading} /> : list.data.items.map((org) => <OrganizationCard key={`${org.gid}-${version}`} session={session} org={org} onChanged={reload} />)}
      <nav class="actions pager" aria-label="Pages">
        <button type="button" class="secondary" disabled={pages.length === 0} onClick={() => setPages(pages.slice(0, -1))}>
          Previous page
        </button>
        <button type="button" class="secondary" disabled={!list.data?.next_page} onClick={() => list.data?.next_page && setPages([...pages, list.data.next_page])}>
          Next page
        </button>
      </nav>
    </section>
  );
}

const asText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/** `delay 0 → 120 · trust 0.5 → 0.6`: an entry's detail in words. */
const describeDetail = (detail: Record<string, unknown>) =>
  Object.entries(detail)
    .map(([k, v]) => {
      const change = v as { from?: unknown; to?: unknown } | null;
      return change && typeof change === 'object' && 'from' in change ? `${k} ${asText(change.from)} → ${asText(change.to)}` : `${k} ${asText(v)}`;
    })
    .join(' · ') || '—';

export function AuditPage({ session }: { session: Session }) {
  if (!isAdmin(session)) return <Notice kind="info">The audit log is for organization admins and alliance operators.</Notice>;
  return <AuditPageAdmin session={session} />;
}

/** Action (exact or a prefix ending in `.`) and actor filters, and the export of what they match. */
function AuditFilters({ onApply, onExport }: { onApply: (filters: Record<string, string>) => void; onExport: (format: 'csv' | 'json') => void }) {
  const [draft, setDraft] = useState({ action: '', actor: '' });
  return (
    <form
      class="actions"
      aria-label="Filter the audit log"
      onSubmit={(e) => {
        e.preventDefault();
        onApply(Object.fromEntries(Object.entries(draft).filter(([, v]) => v.trim() !== '').map(([k, v]) => [k, v.trim()])));
      }}
    >
      <Field label="Action (or a prefix ending in “.”, e.g. decision.)" name="action" value={draft.action} onInput={(action) => setDraft({ ...draft, action })} />
      <Field label="Actor" name="actor" value={draft.actor} onInput={(actor) => setDraft({ ...draft, actor })} />
      <button type="submit">Filter</button>
      <button type="button" class="secondary" onClick={() => onExport('csv')}>
        Export CSV
      </button>
      <button type="button" class="secondary" onClick={() => onExport('json')}>
        Export JSON
      </button>
    </form>
  );
}

function AuditPageAdmin({ session }: { session: Session }) {
  const { api } = session;
  const [pages, setPages] = useState<string[]>([]);
  const [filters, setFilters] = useState<Record<string, string>>({});
  const [exportError, setExportError] = useState<string>();
  const page = pages.at(-1);
  const list = useLoad(() => api.get('/audit', AuditListResponse, { page_size: 50, ...filters, ...(page ? { page } : {}) }), [page, filters]);
  async function exportAs(format: 'csv' | 'json') {
    setExportError(undefined);
    try {
      const text = await api.text(`/audit/export?${new URLSearchParams({ ...filters, format }).toString()}`);
      download(`rampart-audit.${format}`, text, format === 'csv' ? 'text/csv' : 'application/json');
    } catch (err) {
      setExportError(describeError(err).message);
    }
  }
  return (
    <section aria-labelledby="audit-h">
      <h1 id="audit-h">Audit log</h1>
      <p class="muted">{isOperator(session) ? 'Every organization' : 'Your organization'}: decisions, agents and their keys, settings, users, API keys and operator actions — who, from where, when.</p>
      <AuditFilters
        onApply={(f) => {
          setPages([]);
          setFilters(f);
        }}
        onExport={(format) => void exportAs(format)}
      />
      {exportError && <Notice kind="error">{exportError}</Notice>}
      {list.error && <Notice kind="error">{list.error}</Notice>}
      {!list.data ? (
        <Loading loading={list.loading} />
      ) : list.data.items.length === 0 ? (
        <Notice kind="info">Nothing recorded yet.</Notice>
      ) : (
        <div class="table-wrap">
          {/* Every earlier page held page_size (50) entries: it had a next one. */}
          <p class="muted totals" data-testid="totals">
            {totalsLabel({ shown: list.data.items.length, before: pages.length * 50, hasNext: Boolean(list.data.next_page) })}
          </p>
          <table class="browse" aria-label="Audit log">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">What</th>
                <th scope="col">On</th>
                <th scope="col">Details</th>
                <th scope="col">From</th>
              </tr>
            </thead>
            <tbody>
              {list.data.items.map((e) => (
                <tr key={e.id}>
                  <td data-label="When">
                    <Time at={e.at} />
                  </td>
                  <td data-label="Who">{e.actor}</td>
                  <td data-label="What">{e.action}</td>
                  <td data-label="On">{e.target}</td>
                  <td data-label="Details">{describeDetail(e.detail)}</td>
                  <td data-label="From">
                    <span class="value">{e.address}</span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav class="actions pager" aria-label="Pages">
        <button type="button" class="secondary" disabled={pages.length === 0} onClick={() => setPages(pages.slice(0, -1))}>
          Newer
        </button>
        <button type="button" class="secondary" disabled={!list.data?.next_page} onClick={() => list.data?.next_page && setPages([...pages, list.data.next_page])}>
          Older
        </button>
      </nav>
    </section>
  );
}
