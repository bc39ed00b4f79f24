import { z } from 'zod';
import { Ipv4Address, Ipv4Network } from './primitives.ts';

/*
 * The part of CrowdSec's Local API (LAPI) that its remediation components ("bouncers") call,
 * served under /api/v1/crowdsec/ so that a bouncer's `api_url` is that address (issue 32).
 * Field names, value spellings and the `null` body of an empty look-up are LAPI's.
 */

/** How many characters a comma-separated LAPI filter parameter may hold. */
const FILTER_TEXT = z.string().max(1024);
const TrueFalse = z.enum(['true', 'false']);

export const CrowdsecDecision = z
  .object({
    id: z.int().min(1).describe("The Rampart indicator's id"),
    origin: z.literal('rampart'),
    type: z.literal('ban'),
    scope: z.enum(['Ip', 'Range']).describe('Ip: one address; Range: a network in CIDR notation'),
    value: z.string().describe('The address (Ip) or network (Range)'),
    duration: z.string().describe('Go duration (e.g. `37h12m5s`): how long it stays listed from this answer on; `0s` in `deleted`'),
    scenario: z.string().describe('`rampart/` and the source kinds behind the score, `+`-separated (`blacklist` for a decision)'),
    simulated: z.literal(false),
  })
  .describe('A CrowdSec decision as LAPI writes it');
export type CrowdsecDecision = z.infer<typeof CrowdsecDecision>;

export const CrowdsecStreamQuery = z.object({
  startup: TrueFalse.default('false').describe('true: everything listed now in `new` (and what this key was sent before in `deleted`); false: the changes since this key\'s previous call'),
  scopes: FILTER_TEXT.optional().describe('Comma-separated scopes to keep (`ip`, `range`; any case); default all'),
  origins: FILTER_TEXT.optional().describe('Comma-separated origins to keep; only `rampart` is served'),
  scenarios_containing: FILTER_TEXT.optional().describe('Comma-separated words: keep decisions whose scenario contains one of them'),
  scenarios_not_containing: FILTER_TEXT.optional().describe('Comma-separated words: drop decisions whose scenario contains one of them'),
});
export type CrowdsecStreamQuery = z.infer<typeof CrowdsecStreamQuery>;

export const CrowdsecStream = z.object({
  new: z.array(CrowdsecDecision).describe('Entries to add, each with the time it stays listed'),
  deleted: z.array(CrowdsecDecision).describe('Entries to remove; an entry whose listing was extended comes in both lists'),
});
export type CrowdsecStream = z.infer<typeof CrowdsecStream>;

export const CrowdsecDecisionsQuery = z.object({
  ip: Ipv4Address.optional().describe('Decisions whose address or network holds this address'),
  range: Ipv4Network.optional().describe('Decisions whose network holds this network (contains=false: that this network holds)'),
  contains: TrueFalse.default('true').describe('With `range`: whether decisions must contain it (true) or lie inside it (false)'),
  scope: z.string().max(32).optional().describe('`ip` or `range` (any case)'),
  value: z.string().max(64).optional().describe('Exact value (address, or network in CIDR notation)'),
  type: z.string().max(32).optional().describe('Decision type; only `ban` is served'),
  scenarios_containing: FILTER_TEXT.optional(),
  scenarios_not_containing: FILTER_TEXT.optional(),
  origins: FILTER_TEXT.optional(),
});
export type CrowdsecDecisionsQuery = z.infer<typeof CrowdsecDecisionsQuery>;

/** LAPI answers a look-up that matches nothing with the JSON `null`. */
export const CrowdsecDecisions = z.array(CrowdsecDecision).nullable();
export type CrowdsecDecisions = z.infer<typeof CrowdsecDecisions>;

/** Deepest nesting kept from a usage-metrics body (LAPI's own document nests 5 levels). */
export const USAGE_METRICS_MAX_DEPTH = 12;

/** Whether a parsed JSON value nests deeper than `limit` levels of arrays and objects. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= limit) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * `POST v1/usage-metrics` (LAPI 1.6): accepted as sent and kept per key. Only its outline and its
 * nesting depth are checked (LAPI's own document evolves); the body limit bounds its size.
 */
export const CrowdsecUsageMetrics = z
  .object({
    remediation_components: z.array(z.record(z.string(), z.unknown())).max(100).optional(),
    log_processors: z.array(z.record(z.string(), z.unknown())).max(100).optional(),
  })
  .loose()
  .refine((body) => !nestsDeeperThan(body, USAGE_METRICS_MAX_DEPTH), { message: `nests deeper than ${USAGE_METRICS_MAX_DEPTH} levels` });
export type CrowdsecUsageMetrics = z.infer<typeof CrowdsecUsageMetrics>;
