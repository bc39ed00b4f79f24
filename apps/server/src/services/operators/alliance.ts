import type { OperatorActivityResponse, OperatorAgent, OperatorAgentListQuery, OperatorAgentListResponse } from '@rampart/contracts';
import type { Store } from '../../store/index.ts';
import { DAY } from '../../store/rollups.ts';
import { agentDrift, stateOf } from '../agents/summary.ts';
import type { OperatorDeps } from './operators.ts';
import type { Rollups } from './rollups.ts';

/*
 * The alliance view for operators (issue 37 item 3): every organization's agents with their one
 * state (contracts agent-state.ts, through services/agents/summary.ts), and the organizations'
 * activity over 1, 7 or 30 days.
 */

/** Agents read per round trip while a state filter fills a page. */
const SCAN_BATCH = 500;
/** Most agents one page examines; past it the page ends short with a cursor to go on. */
const MAX_SCANNED = 10_000;
/** Entries in each top list. */
export const ACTIVITY_TOP = 10;

const nowSeconds = () => Math.floor(Date.now() / 1000);

export async function listAllianceAgents(deps: OperatorDeps, query: OperatorAgentListQuery, now = nowSeconds()): Promise<OperatorAgentListResponse> {
  const filters = { scope: 'operator.agents', state: query.state ?? null, organization: query.organization ?? null };
  let afterId = query.page ? deps.cursors.decode<number>(query.page, filters) : null;
  const items: Array<{ id: number; agent: OperatorAgent }> = [];
  let scanned = 0;
  let exhausted = false;
  while (items.length <= query.page_size && scanned < MAX_SCANNED) {
    const limit = query.state ? SCAN_BATCH : query.page_size + 1;
    const rows = await deps.store.agents.allianceAgents({ afterId, orgGid: query.organization ?? null, limit });
    scanned += rows.length;
    for (const { org_gid, org_name, keys, row } of rows) {
      afterId = row.id;
      const state = stateOf(row, keys, now);
      if (query.state && state.state !== query.state) continue;
      const drift = agentDrift(row, now);
      items.push({
        id: row.id,
        agent: {
          organization: { gid: org_gid, name: org_name },
          gaid: row.gaid,
          hostname: row.hostname,
          state: state.state,
          state_since: state.since,
          last_checkin: row.last_checkin_at,
          drifting: drift.drifting,
          drift_since: drift.drift_since,
          version: row.reported_version ?? row.document.version,
          settings_version: row.version,
        },
      });
      if (items.length > query.page_size) break;
    }
    if (rows.length < limit) {
      exhausted = items.length <= query.page_size;
      break;
    }
  }
  const page = items.slice(0, query.page_size);
  // More may follow: the page is full and one more matched, or the scan stopped at its bound.
  const more = items.length > query.page_size || (!exhausted && scanned >= MAX_SCANNED);
  const lastId = items.length > query.page_size ? page.at(-1)?.id : afterId;
  return { items: page.map((i) => i.agent), next_page: more && lastId != null ? deps.cursors.encode(filters, lastId) : null };
}

/**
 * Reports (rollups) and new indicators per organization and UTC day, and the top lists, over the
 * last `days` days (today included). Organizations with neither in the window are left out.
 */
export async function allianceActivity(store: Store, rollups: Pick<Rollups, 'flush'>, days: number, now = nowSeconds()): Promise<OperatorActivityResponse> {
  // This replica's counts first, as /overview/history does: what it answers is exact.
  await rollups.flush();
  const today = now - (now % DAY);
  const since = today - (days - 1) * DAY;
  const activity = await store.rollups.activity(since, ACTIVITY_TOP);
  const key = (orgId: number, day: number) => `${orgId}:${day}`;
  const reports = new Map(activity.reports.map((r) => [key(r.orgId, r.day), r.n]));
  const fresh = new Map(activity.newIndicators.map((r) => [key(r.orgId, r.day), r.n]));
  const dayList = Array.from({ length: days }, (_, i) => since + i * DAY);
  return {
    at: now,
    days,
    since,
    organizations: activity.organizations.map((o) => {
      const per_day = dayList.map((day) => ({ day, reports: reports.get(key(o.id, day)) ?? 0, new_indicators: fresh.get(key(o.id, day)) ?? 0 }));
      return {
        gid: o.gid,
        name: o.name,
        reports: per_day.reduce((t, d) => t + d.reports, 0),
        new_indicators: per_day.reduce((t, d) => t + d.new_indicators, 0),
        per_day,
      };
    }),
    new_indicators: activity.total,
    top_sources: activity.sources,
    top_asns: activity.asns,
    top_countries: activity.countries,
  };
}
