import { z } from 'zod';
import { PluginState } from './agent-messages.ts';
import { AgentStateName } from './agent-state.ts';
import { IndicatorKindName } from './browse.ts';
import { ScoreExplanation } from './records.ts';

/*
 * Beyond the specification: "why is this blocked?" (`GET /why`) — for one indicator and the
 * caller's organization now: the decision or score that decides it, which organizations' reports
 * made the score, when it falls below each agent's threshold, and which agents enforce it.
 * Charged as a single look-up.
 */

export const WhyQuery = z
  .strictObject({
    kind: IndicatorKindName,
    value: z.string().trim().min(1).max(2048).describe('The address or CIDR network, domain, URL or digest'),
  })
  .meta({ description: 'The indicator to explain' });
export type WhyQuery = z.infer<typeof WhyQuery>;

export const BLOCK_REASONS = ['reserved', 'whitelist', 'blacklist', 'score', 'blocking_rule', 'below_threshold', 'not_held'] as const;
export const BlockReasonName = z
  .enum(BLOCK_REASONS)
  .describe(
    'reserved: in the organization reserved_ips, never blocked; whitelist / blacklist: the organization decision; score: live score >= threshold; blocking_rule: the organization blocking_roule matches; below_threshold: nothing blocks it; not_held: no record is held, so no list carries it',
  );

export const WhyRecord = z.object({
  value: z.string().describe('The held record: the address, a network containing it, domain, URL or digest'),
  score: z.int().describe('Score at the anchor ts as the organization sees it (s0)'),
  ts: z.int().describe('Anchor, epoch seconds'),
  live_score: z.number(),
  decision: z.literal([0, 1]).nullable().describe('The organization decision applying to this record; null none (or an expired block)'),
  ttl: z.int().nullable(),
});

export const WhyReporter = z.object({
  gid: z.string(),
  name: z.string(),
  trust: z.number(),
  confidence: z.number(),
  events: z.int(),
  first_ts: z.int(),
  last_ts: z.int(),
  sources: z.array(z.string()).describe('IPv4: sources of this organization reports'),
});

export const WhyAgent = z.object({
  gaid: z.string(),
  alive: z.boolean(),
  running: z.enum(['yes', 'no']),
  state: AgentStateName.describe('The agent state, as GET /agents gives it'),
  state_since: z.int().nullable(),
  score_threshold: z.int(),
  blocked: z.boolean().describe('Whether the indicator is on this agent list now, by the shared precedence'),
  reason: BlockReasonName,
  blocked_until: z.int().nullable().describe('First second at which it leaves this agent list (live score below the threshold, or the block ttl); null: no end foreseen or not blocked'),
  enforcing: z.boolean().describe('Blocked, and the agent is alive, running and its last feedback shows a healthy active enforcer'),
  enforcers: z.array(
    z.object({
      name: z.string(),
      active: z.boolean(),
      state: PluginState.nullable(),
      score_threshold: z.int().nullable().describe('Threshold the enforcer reported in its last feedback'),
      enforced: z.int().nullable().describe('Entries it said it enforces'),
      error: z.string().nullable(),
      at: z.int().nullable().describe('When it last reported'),
    }),
  ),
});

export const WhyResponse = z
  .object({
    kind: IndicatorKindName,
    value: z.string().describe('The indicator as the service stores it (canonical form)'),
    at: z.int().describe('Epoch seconds the answer was computed for'),
    held: z.boolean(),
    reason: BlockReasonName.describe('What decides for the organization before any threshold: reserved, whitelist, blacklist, blocking_rule, else score (each agent threshold decides), or not_held'),
    decision: z
      .object({
        decision: z.literal([0, 1]),
        ttl: z.int().nullable(),
        expired: z.boolean(),
        on: z.string().describe('The value the decision was set on (a covering network for IPv4)'),
        reason: z.string().nullable().describe('Why, as given with the decision'),
        set_by: z.string().nullable().describe('Who set it'),
      })
      .nullable(),
    reserved_range: z.string().nullable().describe('IPv4: the reserved_ips range it lies in'),
    blocking_rule: z.object({ score: z.number(), tags: z.array(z.string()), matches: z.boolean() }).nullable(),
    records: z.array(WhyRecord).describe('Held records: for an address, itself and every held network containing it, most specific first'),
    reporters: z.array(WhyReporter).describe('Organizations whose reports made the score of the first record'),
    score_components: ScoreExplanation.nullable(),
    agents: z.array(WhyAgent).describe("Active agents of the organization, each with its enforcers of this kind (for domains, URLs and digests: those that report it as `<label>/<kind>`, and the kind's own integration dns_e, proxy_f or endpoint_d when active)"),
  })
  .meta({ description: 'Why an indicator is (or is not) blocked for the organization now' });
export type WhyResponse = z.infer<typeof WhyResponse>;
