import { z } from 'zod';
import { AgentStateName } from './agent-state.ts';
import { OrgId, PageCursor } from './primitives.ts';

/*
 * The alliance view for operators (issue 37 item 3): every organization's agents with their one
 * state (agent-state.ts), and the organizations' activity over 1, 7 or 30 days.
 */

export const OperatorAgentListQuery = z.strictObject({
  state: AgentStateName.optional().describe('Only agents in this state'),
  organization: OrgId.optional().describe('Only agents of this organization'),
  page_size: z.coerce.number().int().min(1).max(500).default(50).describe('Rows per page, 1 to 500 (default 50); a page filtered by state may hold fewer: follow next_page until null'),
  page: PageCursor.optional(),
});
export type OperatorAgentListQuery = z.infer<typeof OperatorAgentListQuery>;

export const OperatorAgent = z
  .object({
    organization: z.object({ gid: z.string(), name: z.string() }),
    gaid: z.string(),
    hostname: z.string().nullable(),
    state: AgentStateName,
    state_since: z.int().nullable().describe('Epoch seconds the state holds since, where known'),
    last_checkin: z.int().nullable().describe('Epoch seconds; null: never'),
    drifting: z.boolean().describe('Some enforcer has not held what the server expects for longer than one sync interval plus one reconcile'),
    drift_since: z.int().nullable(),
    version: z.string().describe('Software version the agent reported, else the one registered'),
    settings_version: z.int(),
  })
  .meta({ description: "An agent as an operator sees it in the alliance view" });
export type OperatorAgent = z.infer<typeof OperatorAgent>;

export const OperatorAgentListResponse = z.object({ items: z.array(OperatorAgent), next_page: z.string().nullable() });
export type OperatorAgentListResponse = z.infer<typeof OperatorAgentListResponse>;

export const OperatorActivityQuery = z.strictObject({
  days: z.enum(['1', '7', '30']).default('7').transform(Number).describe('Window: the last 1, 7 or 30 days (default 7)'),
});

const Top = z.array(z.object({ value: z.string(), indicators: z.int() }));

export const OperatorActivityResponse = z
  .object({
    at: z.int().describe('Epoch seconds the figures were taken'),
    days: z.int(),
    since: z.int().describe('First second of the window (the first UTC day counted)'),
    organizations: z.array(
      z.object({
        gid: z.string(),
        name: z.string(),
        reports: z.int().describe('Reports stored in the window (rollups)'),
        new_indicators: z.int().describe('IPv4 indicators new to the alliance in the window that this organization reported'),
        per_day: z.array(z.object({ day: z.int(), reports: z.int(), new_indicators: z.int() })).describe('Every UTC day of the window, oldest first'),
      }),
    ).describe('Organizations with reports or new indicators in the window (others are left out), by creation'),
    new_indicators: z.int().describe('IPv4 indicators new to the alliance in the window'),
    top_sources: Top,
    top_asns: Top,
    top_countries: Top,
  })
  .meta({ description: "The organizations' activity, and what the new indicators were, over the window" });
export type OperatorActivityResponse = z.infer<typeof OperatorActivityResponse>;
