import { z } from 'zod';

/*
 * One definition of an agent's state (issue 37 item 2), computed by the server for `GET /agents`,
 * "why" and `rampart agent list`, and labelled by the console with AGENT_STATE_LABELS: no place
 * decides on its own that an agent is "alive" or "dead".
 *
 * The first that applies wins:
 *   deactivated   its keys no longer work (DELETE /agents/{gaid}); since: when
 *   keys_revoked  it was given keys, and every one is revoked or expired: it cannot call in
 *   withdrawn     its settings say `running: no`: it enforces nothing, by the organization's choice
 *   never_seen    it never checked in (registered, maybe given a key, not started)
 *   silent        it did check in, but not within 2 x sync_time minutes; since: its last check-in
 *   drifting      alive, but an enforcer's target has not held what the server expects for longer
 *                 than one sync interval plus one reconcile (read-back attestation); since: the drift
 *   alive         checked in within 2 x sync_time minutes, not cut off, enforcing as expected
 */

export const AGENT_STATES = ['deactivated', 'keys_revoked', 'withdrawn', 'never_seen', 'silent', 'drifting', 'alive'] as const;
export const AgentStateName = z.enum(AGENT_STATES).describe(
  'deactivated; keys_revoked (every key it was given is revoked or expired); withdrawn (running: no); never_seen; silent (no check-in within 2 x sync_time minutes); drifting (alive, but a target does not hold what the server expects); alive',
);
export type AgentStateName = z.infer<typeof AgentStateName>;

/** Words for people (console, CLI tables); `since` is added by whoever shows it. */
export const AGENT_STATE_LABELS: Record<AgentStateName, string> = {
  deactivated: 'deactivated',
  keys_revoked: 'keys revoked',
  withdrawn: 'withdrawn (running: no)',
  never_seen: 'never seen',
  silent: 'silent',
  drifting: 'drifting',
  alive: 'alive',
};

/** Alive = checked in within 2 x sync_time minutes (decisions.md, Agents). */
export function checkedInRecently(lastCheckin: number | null, syncTimeMinutes: number, now: number): boolean {
  return lastCheckin !== null && now - lastCheckin <= 2 * syncTimeMinutes * 60;
}

export interface AgentStateInput {
  /** Epoch seconds it was deactivated; null while active. */
  deactivated_at: number | null;
  /** Keys it was ever given, and those neither revoked nor expired now. */
  keys: { issued: number; live: number };
  running: 'yes' | 'no';
  last_checkin: number | null;
  /** Minutes. */
  sync_time: number;
  /** Epoch seconds since the earliest drift of its drifting enforcers; null when none drifts. */
  drift_since: number | null;
}

export interface AgentState {
  state: AgentStateName;
  /** Epoch seconds the state holds since, where known: deactivation, the last check-in (silent), the drift; else null. */
  since: number | null;
  /** Checked in recently, active, and not cut off (some key it was given still works, or it was given none). */
  alive: boolean;
}

export function agentState(a: AgentStateInput, now: number): AgentState {
  const recent = checkedInRecently(a.last_checkin, a.sync_time, now);
  // An agent that was never given an agent key may still check in with an API key (`?gaid=`).
  const cutOff = a.keys.issued > 0 && a.keys.live === 0;
  const alive = a.deactivated_at === null && !cutOff && recent;
  const at = (state: AgentStateName, since: number | null = null): AgentState => ({ state, since, alive });
  if (a.deactivated_at !== null) return at('deactivated', a.deactivated_at);
  if (cutOff) return at('keys_revoked');
  if (a.running === 'no') return at('withdrawn');
  if (a.last_checkin === null) return at('never_seen');
  if (!recent) return at('silent', a.last_checkin);
  if (a.drift_since !== null) return at('drifting', a.drift_since);
  return at('alive');
}

/** "silent since 2026-…", "alive": a state in words, with its time in ISO 8601 UTC when it has one. */
export function describeAgentState(s: Pick<AgentState, 'state' | 'since'>): string {
  const label = AGENT_STATE_LABELS[s.state];
  return s.since === null ? label : `${label} since ${new Date(s.since * 1000).toISOString()}`;
}
