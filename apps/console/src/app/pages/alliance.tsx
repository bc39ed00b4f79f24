import { useState } from 'preact/hooks';
import { AGENT_STATE_LABELS, AGENT_STATES, OperatorActivityResponse, OperatorAgentListResponse, type OperatorAgent } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Loading, Notice, Select, formatTime, useLoad } from '../components.tsx';
import type { Session } from '../session.ts';
import { STATE_BADGE, ago } from './agents.tsx';

/*
 * The alliance view for operators (issue 37 item 3): every organization's agents in their one
 * state (GET /operator/agents), and the organizations' activity (GET /operator/activity).
 */

function AllianceAgents({ session }: { session: Session }) {
  const [state, setState] = useState('');
  const [more, setMore] = useState<{ items: OperatorAgent[]; next: string | null; error?: string }>({ items: [], next: null });
  const first = useLoad(async () => {
    const res = await session.api.get('/operator/agents', OperatorAgentListResponse, { state: state || undefined, page_size: 100 });
    setMore({ items: [], next: res.next_page });
    return res;
  }, [state]);
  async function loadMore() {
    try {
      const res = await session.api.get('/operator/agents', OperatorAgentListResponse, { state: state || undefined, page_size: 100, page: more.next ?? undefined });
      setMore({ items: [...more.items, ...res.items], next: res.next_page });
    } catch (err) {
      setMore({ ...more, error: describeError(err).message });
    }
  }
  const agents = [...(first.data?.items ?? []), ...more.items];
  return (
    <section aria-labelledby="alliance-agents-h">
      <h2 id="alliance-agents-h">Agents</h2>
      <Select label="State" value={state} onChange={setState} options={[['', 'Every state'], ...AGENT_STATES.map((s): [string, string] => [s, AGENT_STATE_LABELS[s]])]} />
      {!first.data ? (
        <Loading {...first} />
      ) : agents.length === 0 ? (
        <p>No agent{state ? ` is ${AGENT_STATE_LABELS[state as OperatorAgent['state']]}` : ' is registered'}.</p>
      ) : (
        <div class="table-wrap">
          <table class="browse" aria-label="Agents of the alliance">
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">State</th>
                <th scope="col">Last check-in</th>
                <th scope="col">Version</th>
              </tr>
            </thead>
            <tbody>
              {agents.map((a) => (
                <tr key={a.gaid}>
                  <td data-label="Agent" class="primary">
                    <span class="value">{a.gaid}</span>
                    <div class="muted">
                      {a.organization.name}
                      {a.hostname && ` · ${a.hostname}`}
                    </div>
                  </td>
                  <td data-label="State">
                    <span class={`badge ${STATE_BADGE[a.state]}`} title={a.state_since === null ? undefined : `since ${formatTime(a.state_since)}`}>
                      {AGENT_STATE_LABELS[a.state]}
                    </span>
                  </td>
                  <td data-label="Last check-in">{ago(a.last_checkin)}</td>
                  <td data-label="Version">
                    {a.version}
                    <div class="muted">settings v{a.settings_version}</div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {more.error && <Notice kind="error">{more.error}</Notice>}
      {more.next && (
        <button type="button" class="secondary" onClick={() => void loadMore()}>
          More agents
        </button>
      )}
    </section>
  );
}

function Top({ title, rows }: { title: string; rows: Array<{ value: string; indicators: number }> }) {
  return (
    <div class="card">
      <h3>{title}</h3>
      {rows.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <ol>
          {rows.map((r) => (
            <li key={r.value}>
              {r.value} · {r.indicators.toLocaleString()}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

function AllianceActivity({ session }: { session: Session }) {
  const [days, setDays] = useState('7');
  const activity = useLoad(() => session.api.get('/operator/activity', OperatorActivityResponse, { days }), [days]);
  const a = activity.data;
  return (
    <section aria-labelledby="alliance-activity-h">
      <h2 id="alliance-activity-h">Activity</h2>
      <Select label="Over" value={days} onChange={setDays} options={[['1', 'today'], ['7', 'the last 7 days'], ['30', 'the last 30 days']]} />
      {!a ? (
        <Loading {...activity} />
      ) : (
        <>
          <p>
            {a.new_indicators.toLocaleString()} IPv4 indicator{a.new_indicators === 1 ? '' : 's'} new to the alliance since {formatTime(a.since)}.
          </p>
          {a.organizations.length === 0 ? (
            <p>No organization reported anything over this window.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Organization</th>
                    <th scope="col">Reports</th>
                    <th scope="col">New indicators</th>
                  </tr>
                </thead>
                <tbody>
                  {a.organizations.map((o) => (
                    <tr key={o.gid}>
                      <td>{o.name}</td>
                      <td>{o.reports.toLocaleString()}</td>
                      <td>{o.new_indicators.toLocaleString()}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <div class="grid">
            <Top title="Top sources" rows={a.top_sources} />
            <Top title="Top ASNs" rows={a.top_asns} />
            <Top title="Top countries" rows={a.top_countries} />
          </div>
        </>
      )}
    </section>
  );
}

export function AlliancePage({ session }: { session: Session }) {
  return (
    <section aria-labelledby="alliance-h">
      <h1 id="alliance-h">Alliance</h1>
      <AllianceActivity session={session} />
      <AllianceAgents session={session} />
    </section>
  );
}
