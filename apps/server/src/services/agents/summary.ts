import { agentState, checkedInRecently, type AgentState, type AgentSummary } from '@rampart/contracts';
import type { AgentRow, EnforcedEntry } from '../../store/index.ts';
import { isDrifting } from './drift.ts';

/** Checked in within 2 x sync_time minutes (decisions.md, Agents); the agent's state says more (stateOf). */
export function isAlive(row: Pick<AgentRow, 'last_checkin_at' | 'document'>, nowSeconds: number): boolean {
  return checkedInRecently(row.last_checkin_at, row.document.sync_time, nowSeconds);
}

export type KeyCount = { issued: number; live: number };
const NO_KEYS: KeyCount = { issued: 0, live: 0 };

/** The agent's one state (contracts agent-state.ts) from its row and its keys. */
export function stateOf(row: AgentRow, keys: KeyCount | undefined, nowSeconds: number): AgentState {
  return agentState(
    {
      deactivated_at: row.deactivated_at,
      keys: keys ?? NO_KEYS,
      running: row.document.running,
      last_checkin: row.last_checkin_at,
      sync_time: row.document.sync_time,
      drift_since: agentDrift(row, nowSeconds).drift_since,
    },
    nowSeconds,
  );
}

const RANK = { unknown: 0, ok: 1, degraded: 2, failed: 3 } as const;

/**
 * The worst state the agent reported for the enforcers active in its settings document. Entries
 * of plugins no longer active (a refused setting turned off) are kept for the record but do not
 * count; a plugin that never reported a state is unknown.
 */
export function agentStatus(row: Pick<AgentRow, 'document' | 'enforced'>): AgentSummary['status'] {
  const ips = (row.document.ips ?? {}) as Record<string, { active?: boolean } | undefined>;
  let worst: AgentSummary['status'] = 'unknown';
  for (const [label, entry] of Object.entries(ips)) {
    if (entry?.active !== true) continue;
    const state = row.enforced[label]?.state ?? 'unknown';
    if (RANK[state] > RANK[worst]) worst = state;
  }
  return worst;
}

function enforcedView(e: EnforcedEntry, syncTime: number, now: number): AgentSummary['enforced'][string] {
  const { attestation: a, ...entry } = e;
  return {
    ...entry,
    // Entries stored before issue 17 carry no state or error, before issue 30 no attestation.
    state: e.state ?? null,
    error: e.error ?? null,
    expected: a?.expected ?? null,
    held: a?.held ?? null,
    held_digest: a?.held_digest ?? null,
    listed: a?.listed ?? null,
    server_expected: a?.server_expected ?? null,
    cut: a?.cut ?? null,
    drift_since: a?.drift_since ?? null,
    drifting: isDrifting(e, syncTime, now),
    last_drift: a?.last_drift ?? null,
  };
}

/** Whether some enforcer of an active agent drifts, and since when (the earliest drifting one). */
export function agentDrift(row: Pick<AgentRow, 'enforced' | 'document' | 'deactivated_at'>, now: number): { drifting: boolean; drift_since: number | null } {
  if (row.deactivated_at !== null) return { drifting: false, drift_since: null };
  const since = Object.values(row.enforced)
    .filter((e) => isDrifting(e, row.document.sync_time, now))
    .map((e) => e.attestation!.drift_since!);
  return since.length === 0 ? { drifting: false, drift_since: null } : { drifting: true, drift_since: Math.min(...since) };
}

export function agentSummary(row: AgentRow, keys: KeyCount | undefined, nowSeconds: number): AgentSummary {
  const state = stateOf(row, keys, nowSeconds);
  return {
    gaid: row.gaid,
    version: row.reported_version ?? row.document.version,
    running: row.document.running,
    active: row.deactivated_at === null,
    alive: state.alive,
    state: state.state,
    state_since: state.since,
    live_keys: (keys ?? NO_KEYS).live,
    sync_time: row.document.sync_time,
    last_checkin: row.last_checkin_at,
    last_checkin_via: row.last_checkin_via,
    hostname: row.hostname,
    enforced: Object.fromEntries(Object.entries(row.enforced).map(([label, e]) => [label, enforcedView(e, row.document.sync_time, nowSeconds)])),
    status: agentStatus(row),
    ...agentDrift(row, nowSeconds),
    capabilities: row.capabilities,
    settings_version: row.version,
  };
}
