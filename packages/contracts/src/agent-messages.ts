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
  })
  .meta({ description: 'Feedback of an agent after an enforcement run' });
export type AgentFeedbackBody = z.infer<typeof AgentFeedbackBody>;
