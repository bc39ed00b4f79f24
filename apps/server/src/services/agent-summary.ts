import type { AgentSummary } from '@rampart/contracts';
import type { AgentRow } from '../store/index.ts';

/** Alive = checked in within 2 x sync_time minutes (decisions.md, Agents). */
export function isAlive(row: Pick<AgentRow, 'last_checkin_at' | 'document'>, nowSeconds: number): boolean {
  return row.last_checkin_at !== null && nowSeconds - row.last_checkin_at <= 2 * row.document.sync_time * 60;
}

export function agentSummary(row: AgentRow, nowSeconds: number): AgentSummary {
  return {
    gaid: row.gaid,
    version: row.reported_version ?? row.document.version,
    running: row.document.running,
    active: row.deactivated_at === null,
    alive: row.deactivated_at === null && isAlive(row, nowSeconds),
    sync_time: row.document.sync_time,
    last_checkin: row.last_checkin_at,
    last_checkin_via: row.last_checkin_via,
    hostname: row.hostname,
    enforced: row.enforced,
    settings_version: row.version,
  };
}
