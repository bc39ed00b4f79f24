import { z } from 'zod';
import { AgentRunning } from './agent-config.ts';
import { AgentCapabilities, PluginState } from './agent-messages.ts';
import { AgentId, OrgId, numberLike } from './primitives.ts';
import { AgentStateName } from './agent-state.ts';

/*
 * Records of the agent administration routes (not in the specification, which leaves the
 * settings API "not shown"): the agent list, agent keys and the settings history.
 */

export const AgentParams = z.object({ agid: AgentId });
export type AgentParams = z.infer<typeof AgentParams>;

export const EnforcedByPlugin = z
  .object({
    enforced: z.int().min(0).nullable().describe('Addresses/networks the plugin says it enforces (null when it did not say)'),
    code: z.union([z.number(), z.string()]).nullable().describe('Outcome code of its last run'),
    score_threshold: z.int().min(0).max(1000).nullable(),
    healthy: z.boolean().nullable(),
    state: PluginState.nullable().describe('ok, degraded or failed; null when the agent did not say'),
    error: z.string().nullable().describe('Why it is not ok (a failed call, a setting the agent refused)'),
    at: z.int().describe('Epoch seconds of the report'),
    expected: z.int().min(0).nullable().describe('What the agent says it should enforce with this plugin (null when it did not say)'),
    held: z.int().min(0).nullable().describe('What its target held, read back at the report (null when the agent did not say)'),
    held_digest: z.string().nullable().describe('SHA-256 of the members read back, sorted, one per line'),
    listed: z.int().min(0).nullable().describe("The server's list for this agent at the report: entries at its threshold in its organization's view"),
    server_expected: z
      .int()
      .min(0)
      .nullable()
      .describe('What the server expects the target to hold: listed, less what the agent protects, capped at maximum_rules and the enforcer capacity'),
    cut: z.int().min(0).nullable().describe('listed entries left out by maximum_rules or the capacity: a cut, not a drift'),
    drift_since: z.int().nullable().describe('Epoch seconds since held differs from server_expected; null while they agree'),
    drifting: z.boolean().describe('held has differed from server_expected for longer than one sync interval plus one reconcile'),
    last_drift: z
      .object({ since: z.int(), until: z.int(), held: z.int().min(0), server_expected: z.int().min(0) })
      .nullable()
      .describe('The last difference that ended (a read-back agreed again): when it started and ended, and the figures at its last report'),
  })
  .meta({ description: 'What one enforcement plugin of an agent last reported' });
export type EnforcedByPlugin = z.infer<typeof EnforcedByPlugin>;

export const AgentSummary = z
  .object({
    gaid: AgentId,
    version: z.string().describe('Software version the agent reported, else the one registered'),
    running: AgentRunning,
    active: z.boolean().describe('false once deactivated: its keys no longer work'),
    alive: z.boolean().describe('Checked in within 2 x sync_time minutes, active, and not cut off (a key it was given still works, or it was given none)'),
    state: AgentStateName,
    state_since: z.int().nullable().describe('Epoch seconds the state holds since, where known (deactivated, silent: the last check-in, drifting); else null'),
    live_keys: z.int().min(0).describe('Agent keys that work now: neither revoked nor expired, the agent active'),
    sync_time: z.int().min(1),
    last_checkin: z.int().nullable().describe('Epoch seconds of the last check-in, null when never'),
    last_checkin_via: z.enum(['ipv4', 'feed', 'feedback', 'sync', 'bouncer', 'crowdsec_watcher']).nullable(),
    hostname: z.string().nullable(),
    enforced: z.record(z.string(), EnforcedByPlugin).describe('By enforcement plugin'),
    status: z
      .enum(['ok', 'degraded', 'failed', 'unknown'])
      .describe('Worst state the agent reported for the enforcers active in its settings (unknown when it reported none)'),
    drifting: z.boolean().describe('Some enforcer of the agent is drifting: its target has not held what the server expects for longer than one sync interval plus one reconcile'),
    drift_since: z.int().nullable().describe('Epoch seconds since the earliest drift of its drifting enforcers; null when none drifts'),
    capabilities: AgentCapabilities.nullable().describe('What the agent announced it can run; null before it did'),
    settings_version: z.int().min(1),
  })
  .meta({ description: 'One agent of the organization, as GET /agents lists it' });
export type AgentSummary = z.infer<typeof AgentSummary>;

export const AgentTokenRequest = z
  .strictObject({
    ttl_days: numberLike(z.int().min(1).max(3650)).optional().describe('Days until the key expires; no expiry when omitted'),
  })
  .default({});
export type AgentTokenRequest = z.infer<typeof AgentTokenRequest>;

export const AgentTokenIssued = z
  .object({
    token: z.string().describe('The agent key (a signed JWT); shown once, never stored'),
    token_id: z.string().describe('Its id (jti), used to revoke it'),
    gaid: AgentId,
    org: OrgId,
    header: z.string().describe("Header the agent must send it in (its auth_name)"),
    expires_at: z.int().nullable().describe('Epoch seconds, null when it does not expire'),
  })
  .meta({ description: 'A newly issued agent key' });
export type AgentTokenIssued = z.infer<typeof AgentTokenIssued>;

export const AgentTokenInfo = z.object({
  token_id: z.string(),
  issued_at: z.int(),
  issued_by: z.string().nullable().describe('Username of the admin who issued it'),
  expires_at: z.int().nullable(),
  revoked: z.boolean(),
});
export type AgentTokenInfo = z.infer<typeof AgentTokenInfo>;

export const AgentTokenParams = z.object({ agid: AgentId, token_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) });

export const SettingsHistoryEntry = z
  .object({
    version: z.int().min(1),
    changed_by: z.string().describe('Username, or the gaid of an agent'),
    changed_at: z.string().describe('ISO 8601 UTC'),
    changed_fields: z.array(z.string()).describe('Dotted paths that changed; values are never kept'),
  })
  .meta({ description: 'One change of a settings document' });
export type SettingsHistoryEntry = z.infer<typeof SettingsHistoryEntry>;

export const SettingsHistoryQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
