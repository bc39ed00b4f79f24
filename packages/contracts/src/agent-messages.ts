import { z } from 'zod';
import { ReportedPlugin } from './agent-integrations.ts';
import { AgentId, numberLike } from './primitives.ts';

export const AgentRegisterResponse = z
  .object({
    success: z.boolean(),
    message: z.string(),
    agent_id: AgentId.describe('Echoes the gaid'),
  })
  .meta({ description: 'Answer of POST /agents (201)' });
export type AgentRegisterResponse = z.infer<typeof AgentRegisterResponse>;

/** How one plugin of an agent is doing: ok, degraded (enforcing, but a check fails), failed (not enforcing). */
export const PluginState = z.enum(['ok', 'degraded', 'failed']);
export type PluginState = z.infer<typeof PluginState>;

/** What an agent build can run, announced on the sync channel and in feedback. */
export const AgentCapabilities = z
  .object({
    version: z.string().max(64).describe('Agent software version'),
    enforcers: z.array(z.string().max(64)).max(128).describe('`ips` labels this agent can enforce'),
    sources: z.array(z.string().max(64)).max(128).describe('`ids` labels this agent can read'),
    kinds: z.array(z.enum(['ipv4', 'file', 'domain', 'url'])).max(8).describe('Indicator kinds its enforcers take'),
  })
  .meta({ description: 'What an agent can run' });
export type AgentCapabilities = z.infer<typeof AgentCapabilities>;

/** Generous so that agents enforcing many rules can still report them in one call. */
const MAX_FEEDBACK_ENTRIES = 200_000;

/**
 * Sent by an agent after each enforcement run; counts as its check-in. Not strict, since
 * agents of other versions may add fields.
 */
export const AgentFeedbackBody = z
  .object({
    agid: z.string().min(1).max(256).describe('The gaid of the agent'),
    plugin: ReportedPlugin,
    hostname: z.string().max(255).optional(),
    code: z.union([z.number(), z.string().max(256)]).nullable().optional().describe('Outcome code of the run; null when the command was killed by a signal'),
    score_threshold: numberLike(z.int().min(0).max(1000)).optional(),
    blacklist: z
      .union([z.array(z.string().max(64)).max(MAX_FEEDBACK_ENTRIES), numberLike(z.int().min(0))])
      .optional()
      .describe('Addresses now enforced, or their count'),
    state: PluginState.optional().describe("The plugin's state after the run"),
    error: z.string().max(500).optional().describe('Why it is not ok (a failed call, a refused setting)'),
    capabilities: AgentCapabilities.optional(),
  })
  .meta({ description: 'Feedback of an agent after an enforcement run' });
export type AgentFeedbackBody = z.infer<typeof AgentFeedbackBody>;
