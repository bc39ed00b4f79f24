import { z } from 'zod';
import { REPORTED_PLUGIN_NAMES } from './agent-integrations.ts';
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

/**
 * The name a feedback reports under: one of the fixed names (`ReportedPlugin`) or a key of the
 * `ips` or `ids` object of that agent's registered configuration, as registered (the original
 * client keeps its integrations under its own product keys, `checkpoint_securexl`, `pflist`…).
 * Whether the key is in the configuration is the server's check, against the stored document.
 */
export const FeedbackPlugin = z
  .string()
  .min(1)
  .max(128)
  .describe(
    `One of ${REPORTED_PLUGIN_NAMES.length} fixed names (an integration label of section 2.11, \`dry_run\`, \`agent\`, \`all\`, \`<label>/<kind>\`) or a key of the \`ips\` or \`ids\` object of this agent's registered configuration; anything else is 400`,
  );

const count = z.int().min(0).max(1_000_000_000);

/**
 * Attestation by read-back, beyond what the original client sends (every field optional): what
 * the enforcer's target holds, read back from it after the apply or reconcile (not what the agent
 * remembers handing over), and what the agent should enforce. The control plane compares `held`
 * with its own figure: its list at the agent's threshold and organization view, less `protected`,
 * capped at `maximum_rules` and `capacity`.
 */
export const FeedbackAttestation = z.object({
  expected: count.optional().describe('What this agent should enforce with this plugin at its threshold, after its never-block list and caps'),
  held: count.optional().describe('What the target holds, read back after the apply or reconcile'),
  held_digest: z
    .string()
    .regex(/^[0-9a-f]{64}$/, { message: 'a SHA-256 in lower-case hex' })
    .optional()
    .describe('SHA-256 of the members read back, sorted, one per line (each followed by a line feed)'),
  cut: count.optional().describe('Entries left out because maximum_rules or the enforcer capacity was reached'),
  capacity: count.optional().describe("The enforcer's capacity in entries, when it has one"),
  protected: count.optional().describe('Entries its never-block list keeps out (its own addresses, the control plane, its allow-list)'),
  reconcile_seconds: z.number().min(1).max(86_400).optional().describe('How often the agent reads its targets back'),
});
export type FeedbackAttestation = z.infer<typeof FeedbackAttestation>;

/** Generous so that agents enforcing many rules can still report them in one call. */
const MAX_FEEDBACK_ENTRIES = 200_000;

/**
 * Sent by an agent after each enforcement run; counts as its check-in. Not strict, since
 * agents of other versions may add fields.
 */
export const AgentFeedbackBody = z
  .object({
    agid: z.string().min(1).max(256).describe('The gaid of the agent'),
    plugin: FeedbackPlugin,
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
    ...FeedbackAttestation.shape,
  })
  .meta({ description: 'Feedback of an agent after an enforcement run' });
export type AgentFeedbackBody = z.infer<typeof AgentFeedbackBody>;
