import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { MeResponse, ROLE } from '@rampart/contracts';
import { Api, KEY_STORAGE, describeError, isUnauthorized } from './api.ts';
import { Field, Notice } from './components.tsx';
import { OverviewPage } from './pages/overview.tsx';
import { LookupPage } from './pages/lookup.tsx';
import { AgentsPage } from './pages/agents.tsx';
import { AgentPage } from './pages/agent.tsx';
import { OrganizationPage } from './pages/organization.tsx';
import { VpnPage } from './pages/vpn.tsx';
import { KeysPage } from './pages/keys.tsx';
import { DecisionsPage, IndicatorsPage } from './pages/browse.tsx';
import { AuditPage, OperatorsPage, isOperator } from './pages/operators.tsx';
import { AlliancePage } from './pages/alliance.tsx';
import { ImportPage } from './pages/import.tsx';
import type { Session } from './session.ts';

const ROLE_NAMES: Record<number, string> = { [ROLE.reader]: 'reader', [ROLE.contributor]: 'contributor', [ROLE.admin]: 'organization admin', [ROLE.operator]: 'alliance operator' };

function useHash(): string {
  const [hash, setHash] = useState(location.hash.slice(1) || '/');
  useEffect(() => {
    const on = () => setHash(location.hash.slice(1) || '/');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

/**
 * After a navigation inside the console (not on the first page shown), focus moves to the new
 * page's heading, as a page load would put a screen reader and the Tab order at the content.
 * Pages draw their heading once their data is in, so it is looked for over a few frames; focus
 * the user has already put inside the page is left alone.
 */
function useFocusOnNavigation(path: string): void {
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    let frame = 0;
    let tries = 0;
    const focusHeading = () => {
      // Focus the user already moved into the page stays where it is.
      if (document.activeElement?.closest('main')) return;
      const heading = document.querySelector<HTMLElement>('main h1');
      if (heading) {
        heading.tabIndex = -1;
        heading.focus();
      } else if ((tries += 1) < 300) frame = requestAnimationFrame(focusHeading);
    };
    focusHeading();
    return () => cancelAnimationFrame(frame);
  }, [path]);
}

function SignIn({ onSignedIn, notice }: { onSignedIn: (s: Session) => void; notice?: string | undefined }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const api = new Api(key.trim());
      const me = await api.get('/me', MeResponse);
      sessionStorage.setItem(KEY_STORAGE, key.trim());
      onSignedIn({ api, me });
    } catch (err) {
      setError(describeError(err).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <main class="signin">
      <h1>Rampart console</h1>
      {notice && <Notice kind="info">{notice}</Notice>}
      <form onSubmit={submit} aria-label="Sign in">
        <Field label="API key" name="key" type="password" value={key} onInput={setKey} hint="Kept for this browser tab only." />
        {error && <Notice kind="error">{error}</Notice>}
        <button type="submit" disabled={busy || key.trim() === ''}>
          Sign in
        </button>
      </form>
    </main>
  );
}

const PAGES = [
  { path: '/', label: 'Overview' },
  { path: '/lookup', label: 'Look-up' },
  { path: '/indicators', label: 'Indicators' },
  { path: '/decisions', label: 'Decisions' },
  { path: '/import', label: 'Import' },
  { path: '/agents', label: 'Agents' },
  { path: '/organization', label: 'Organization' },
  { path: '/vpn', label: 'Secure VPN' },
  { path: '/keys', label: 'API keys' },
  { path: '/audit', label: 'Audit log' },
  { path: '/operators', label: 'Organizations' },
  { path: '/alliance', label: 'Alliance' },
];
/** Pages for alliance operators only. */
const OPERATOR_PAGES = new Set(['/operators', '/alliance']);

function Shell({ session, onSignOut }: { session: Session; onSignOut: (why?: string) => void }) {
  const hash = useHash();
  const [path, query] = hash.split('?') as [string, string | undefined];
  const { me } = session;
  let page;
  if (path === '/') page = <OverviewPage session={session} />;
  else if (path === '/lookup') page = <LookupPage session={session} initial={new URLSearchParams(query ?? '').get('q') ?? ''} />;
  else if (path === '/indicators') page = <IndicatorsPage session={session} />;
  else if (path === '/decisions') page = <DecisionsPage session={session} />;
  else if (path === '/import') page = <ImportPage session={session} />;
  else if (path === '/agents') page = <AgentsPage session={session} />;
  else if (path.startsWith('/agents/')) page = <AgentPage session={session} gaid={decodeURIComponent(path.slice('/agents/'.length))} />;
  else if (path === '/organization') page = <OrganizationPage session={session} />;
  else if (path === '/vpn') page = <VpnPage session={session} />;
  else if (path === '/keys') page = <KeysPage session={session} onSignOut={onSignOut} />;
  else if (path === '/audit') page = <AuditPage session={session} />;
  else if (path === '/operators') page = <OperatorsPage session={session} />;
  else if (path === '/alliance') page = isOperator(session) ? <AlliancePage session={session} /> : <Notice kind="info">The alliance view is for alliance operators.</Notice>;
  else page = <Notice kind="error">No such page.</Notice>;
  const current = PAGES.filter((p) => p.path !== '/' && path.startsWith(p.path))[0]?.path ?? '/';
  useFocusOnNavigation(path);
  return (
    <>
      <a
        class="skip"
        href="#content"
        onClick={(e) => {
          // The hash is the router's: move focus instead of navigating.
          e.preventDefault();
          document.getElementById('content')?.focus();
        }}
      >
        Skip to content
      </a>
      <header>
        <a class="brand" href="#/">
          Rampart
        </a>
        <nav aria-label="Main">
          <ul>
            {PAGES.filter((p) => !OPERATOR_PAGES.has(p.path) || isOperator(session)).map((p) => (
              <li key={p.path}>
                <a href={`#${p.path}`} aria-current={current === p.path ? 'page' : undefined}>
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who" aria-label="Signed in as">
          <span>{me.user.username}</span>
          <span class="badge">{ROLE_NAMES[me.user.role] ?? `role ${me.user.role}`}</span>
          <span>{me.organization.name}</span>
          <span class="coins" title="Coin balance">
            {me.organization.balance.toLocaleString()} coins
          </span>
          <button type="button" class="secondary" onClick={() => onSignOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="content" tabIndex={-1}>
        {page}
      </main>
    </>
  );
}

function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(() => sessionStorage.getItem(KEY_STORAGE) !== null);
  // Why the stored key could not be checked: the server failed or is unreachable (the key is kept).
  const [restoreError, setRestoreError] = useState<string>();
  const [signedOutWhy, setSignedOutWhy] = useState<string>();
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    const key = sessionStorage.getItem(KEY_STORAGE);
    if (!key) return;
    const api = new Api(key);
    setRestoreError(undefined);
    api.get('/me', MeResponse).then(
      (me) => {
        setSession({ api, me });
        setRestoring(false);
      },
      (err: unknown) => {
        if (isUnauthorized(err)) {
          // Only a refused key signs out.
          sessionStorage.removeItem(KEY_STORAGE);
          setSignedOutWhy(`Signed out: ${describeError(err).message}`);
          setRestoring(false);
        } else {
          setRestoreError(describeError(err).message);
        }
      },
    );
  }, [attempt]);
  const signOut = (why?: string) => {
    sessionStorage.removeItem(KEY_STORAGE);
    setSignedOutWhy(why);
    setSession(null);
    setRestoring(false);
    setRestoreError(undefined);
    location.hash = '#/';
  };
  if (restoring && restoreError)
    return (
      <main class="signin">
        <h1>Rampart console</h1>
        <Notice kind="error">{restoreError}</Notice>
        <div class="actions">
          <button type="button" onClick={() => setAttempt((n) => n + 1)}>
            Retry
          </button>
          <button type="button" class="secondary" onClick={() => signOut()}>
            Sign out
          </button>
        </div>
      </main>
    );
  if (restoring) return <p aria-busy="true">Loading…</p>;
  if (!session) return <SignIn onSignedIn={setSession} notice={signedOutWhy} />;
  return (
    <Shell
      session={{ ...session, refreshMe: async () => setSession({ ...session, me: await session.api.get('/me', MeResponse) }) }}
      onSignOut={signOut}
    />
  );
}

render(<App />, document.getElementById('root')!);
