import { z } from 'zod';
import { AGENT_STATE_LABELS, AgentSummary } from '@rampart/contracts';
import { Loading, Notice, useLoad } from '../components.tsx';
import { isAdmin, type Session } from '../session.ts';
import { RegisterAgentForm } from './agent-admin.tsx';

export const ago = (ts: number | null) => {
  if (ts === null) return 'never';
  const s = Math.max(0, Math.round(Date.now() / 1000 - ts));
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
};

/** Badge colour of each state: alive green, withdrawn or never seen neutral, the rest red. */
export const STATE_BADGE: Record<AgentSummary['state'], string> = {
  alive: 'alive',
  drifting: 'dead',
  silent: 'dead',
  never_seen: 'warn',
  withdrawn: 'warn',
  keys_revoked: 'dead',
  deactivated: 'dead',
};

export function AgentsPage({ session }: { session: Session }) {
  // Non-admins see why, and the page does not ask the API for what it would refuse.
  if (!isAdmin(session)) return <Notice kind="info">Agents are managed by organization admins.</Notice>;
  return <AgentsPageAdmin session={session} />;
}

function AgentsPageAdmin({ session }: { session: Session }) {
  const state = useLoad(() => session.api.get('/agents', z.array(AgentSummary)));
  if (!state.data) return <Loading {...state} />;
  const agents = state.data;
  return (
    <section aria-labelledby="agents-h">
      <h1 id="agents-h">Agents</h1>
      <RegisterAgentForm session={session} onRegistered={state.reload} />
      {agents.length === 0 ? (
        <p>No agent is registered yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">State</th>
                <th scope="col">Last check-in</th>
                <th scope="col">Version</th>
                <th scope="col">Enforced</th>
              </tr>
            </thead>
            <tbody>
              {agents.map((a) => {
                const plugins = Object.entries(a.enforced);
                const enforced = plugins.reduce((n, [, p]) => n + (p.enforced ?? 0), 0);
                const drift = new Set(plugins.map(([, p]) => p.enforced)).size > 1;
                return (
                  <tr key={a.gaid}>
                    <td>
                      <a href={`#/agents/${encodeURIComponent(a.gaid)}`}>{a.gaid}</a>
                      {a.hostname && <div class="muted">{a.hostname}</div>}
                    </td>
                    <td>
                      {/* The server's one definition of the state (contracts agent-state.ts); drifting has its own badge below. */}
                      {a.state !== 'drifting' && (
                        <span class={`badge ${STATE_BADGE[a.state]}`} title={a.state_since === null ? undefined : `since ${new Date(a.state_since * 1000).toISOString()}`}>
                          {AGENT_STATE_LABELS[a.state]}
                          {a.state === 'silent' && a.state_since !== null ? ` ${ago(a.state_since).replace(' ago', '')}` : ''}
                        </span>
                      )}
                      {(a.status === 'degraded' || a.status === 'failed') && (
                        <span
                          class={`badge ${a.status === 'failed' ? 'dead' : 'warn'}`}
                          title={plugins
                            .filter(([, p]) => p.state === 'degraded' || p.state === 'failed')
                            .map(([label, p]) => `${label}: ${p.state}${p.error ? ` (${p.error})` : ''}`)
                            .join('\n')}
                        >
                          {a.status}
                        </span>
                      )}
                      {a.drifting && (
                        <span class="badge dead" title="What its targets hold, read back, has differed from the server's list for longer than one sync interval plus one reconcile">
                          drifting
                        </span>
                      )}
                    </td>
                    <td>
                      {ago(a.last_checkin)}
                      {a.last_checkin_via && <span class="muted"> via {a.last_checkin_via}</span>}
                    </td>
                    <td>{a.version}</td>
                    <td>
                      {plugins.length === 0 ? '—' : enforced.toLocaleString()}
                      {drift && <span class="badge warn" title="Its plugins enforce different counts">drift</span>}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
