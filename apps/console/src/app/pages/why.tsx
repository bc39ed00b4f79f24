import { useState } from 'preact/hooks';
import type { WhyResponse } from '@rampart/contracts';
import { describeError } from '../api.ts';
import { Notice, formatTime } from '../components.tsx';
import type { Session } from '../session.ts';
import type { IndicatorKind } from '../indicator-kind.ts';

const REASONS: Record<WhyResponse['reason'], string> = {
  reserved: 'It lies in your reserved_ips: never blocked for your organization.',
  whitelist: 'Your organization whitelisted it: never blocked.',
  blacklist: 'Your organization blacklisted it: blocked at every threshold.',
  blocking_rule: "Your organization's blocking rule matches it (score and tag).",
  score: "Its live score decides: blocked where it reaches an agent's threshold.",
  below_threshold: 'Nothing blocks it.',
  not_held: 'No record is held for it, so no list carries it.',
};

const AGENT_REASONS: Record<WhyResponse['reason'], string> = {
  reserved: 'reserved', whitelist: 'whitelisted', blacklist: 'blacklisted', blocking_rule: 'blocking rule', score: 'score ≥ threshold', below_threshold: 'score below threshold', not_held: 'not held',
};

/** "Why is this blocked?" for the looked-up indicator: asked on demand (it is priced as a look-up). */
export function WhyPanel({ session, kind, value }: { session: Session; kind: IndicatorKind; value: string }) {
  const [why, setWhy] = useState<WhyResponse>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  async function ask() {
    setBusy(true);
    setError(undefined);
    try {
      setWhy(await session.api.client.why(kind, value));
    } catch (err) {
      setError(describeError(err).message);
    } finally {
      setBusy(false);
    }
  }
  return (
    <section class="card wide" aria-label="Why is this blocked?" aria-busy={busy ? 'true' : undefined}>
      <h2>Why is this blocked?</h2>
      {!why && (
        <button type="button" class="secondary" disabled={busy} onClick={() => void ask()}>
          {busy ? 'Asking…' : 'Explain (one look-up)'}
        </button>
      )}
      {error && <Notice kind="error">{error}</Notice>}
      {why && (
        <>
          <p data-testid="why-reason">{REASONS[why.reason]}</p>
          {why.decision && (
            <p data-testid="why-decision">
              Your decision: {why.decision.decision === 1 ? 'Blacklist' : 'Whitelist'} on {why.decision.on}
              {why.decision.ttl ? ` until ${formatTime(why.decision.ttl)}` : ''}
              {why.decision.expired ? ' (expired)' : ''}
              {why.decision.set_by ? `, set by ${why.decision.set_by}` : ''}
              {why.decision.reason ? `: “${why.decision.reason}”` : ''}
            </p>
          )}
          {why.reserved_range && <p>Reserved range: {why.reserved_range}</p>}
          {why.records.length > 1 && (
            <p>
              Held records covering it: {why.records.map((r) => `${r.value} (live ${r.live_score.toFixed(1)})`).join(', ')}
            </p>
          )}
          <WhyReporters why={why} />
          <WhyAgents why={why} />
        </>
      )}
    </section>
  );
}

function WhyReporters({ why }: { why: WhyResponse }) {
  return (
    <>
      {why.reporters.length > 0 && (
        <div class="table-wrap">
          <table class="browse" aria-label="Reporting organizations">
            <caption>Organizations whose reports made the score</caption>
            <thead>
              <tr>
                <th scope="col">Organization</th>
                <th scope="col">Trust</th>
                <th scope="col">Confidence</th>
                <th scope="col">Reports</th>
                <th scope="col">Last report</th>
              </tr>
            </thead>
            <tbody>
              {why.reporters.map((r) => (
                <tr key={r.gid}>
                  <td data-label="Organization">{r.name}</td>
                  <td data-label="Trust">{r.trust}</td>
                  <td data-label="Confidence">{r.confidence}</td>
                  <td data-label="Reports">{r.events}</td>
                  <td data-label="Last report">{formatTime(r.last_ts)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

const KIND_PLURAL: Record<WhyResponse['kind'], string> = { ipv4: 'IPv4 addresses', domain: 'domains', url: 'URLs', file: 'file digests' };

function WhyAgents({ why }: { why: WhyResponse }) {
  return (
    <div class="table-wrap">
      <table class="browse" aria-label="Agents">
        <caption>Your agents</caption>
        <thead>
          <tr>
            <th scope="col">Agent</th>
            <th scope="col">Threshold</th>
            <th scope="col">On its list</th>
            <th scope="col">Until</th>
            <th scope="col">Enforcing</th>
          </tr>
        </thead>
        <tbody>
          {why.agents.length === 0 && (
            <tr>
              <td colSpan={5}>No active agents.</td>
            </tr>
          )}
          {why.agents.map((a) => (
            <tr key={a.gaid}>
              <td data-label="Agent">
                <a href={`#/agents/${encodeURIComponent(a.gaid)}`}>{a.gaid}</a>
              </td>
              <td data-label="Threshold">{a.score_threshold}</td>
              <td data-label="On its list">{`${a.blocked ? 'yes' : 'no'} (${AGENT_REASONS[a.reason]})`}</td>
              <td data-label="Until">{a.blocked ? (a.blocked_until === null ? 'no end' : formatTime(a.blocked_until)) : '—'}</td>
              <td data-label="Enforcing">
                {a.enforcing
                  ? `yes: ${a.enforcers.filter((e) => e.active && e.state !== 'failed').map((e) => e.name).join(', ')}`
                  : !a.alive
                    ? 'no: not checked in lately'
                    : a.running === 'no'
                      ? 'no: stopped (running = no)'
                      : a.blocked && a.enforcers.length === 0
                        ? `no: it enforces no ${KIND_PLURAL[why.kind]}`
                        : a.blocked
                          ? `no: ${a.enforcers.find((e) => e.error)?.error ?? 'no healthy enforcer reported'}`
                        : 'no'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
