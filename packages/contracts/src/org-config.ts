import { z } from 'zod';
import { Ipv4OrNetwork, Tag, numberLike, uniqueArray } from './primitives.ts';

const bandScore = numberLike(z.number().min(0).max(1000));

function band(min: number, max: number) {
  return z
    .tuple([bandScore, bandScore])
    .refine(([low, high]) => low <= high, { message: 'a band is [min, max] with min <= max' })
    .prefault([min, max])
    .describe('[min, max] score band');
}

const names = (value: string) => z.array(z.string().min(1).max(255)).max(64).default([value]);
const fieldName = (value: string) => z.string().min(1).max(255).default(value);

export const LiveSettings = z
  .strictObject({
    index_name: fieldName('poc_traffic').describe('Index where the traffic data is stored'),
    score_name: fieldName('score').describe('Field holding the crime score'),
    elastic_url: z
      .union([z.literal('default'), z.url({ protocol: /^https?$/ }).max(2048)])
      .default('default')
      .describe('Search-store URL, or default'),
    action_name: fieldName('action').describe('Field read to tell allow from deny'),
    date_time_name: fieldName('@timestamp').describe('Name of the time stamp field'),
    allow_value: names('Allow').describe('Values meaning traffic was accepted'),
    deny_value: names('Deny').describe('Values meaning traffic was blocked'),
    low_score: band(1, 60),
    medium_score: band(60, 120),
    high_score: band(120, 150),
    critical_score: band(150, 1000),
    device_name: names('firewall').describe('Strings that denote the device in parsed data'),
    direction_name: names('direction').describe('Strings that denote the direction'),
    service_name: names('service').describe('Strings that denote the service'),
  })
  .meta({ description: 'How the live page parses stored traffic data' });
export type LiveSettings = z.infer<typeof LiveSettings>;

/** Key name kept as specified (`roule`). */
export const BlockingRule = z
  .strictObject({
    score: bandScore.describe('Minimum score; combined by AND with the tags'),
    tags: uniqueArray(Tag, 0, 100).describe('At least one of these tags must be carried (OR)'),
  })
  .meta({ description: 'Extra blocking rule: block when score >= rule.score AND the indicator carries one of rule.tags' });
export type BlockingRule = z.infer<typeof BlockingRule>;

/** The score_threshold a new agent is offered unless the organization set its own: where the default CRITICAL band starts. */
export const DEFAULT_AGENT_SCORE_THRESHOLD = 150;

/** Beyond spec 2.12 (issue 37): what the console's agent registration form starts from. */
export const AgentDefaults = z
  .strictObject({
    score_threshold: numberLike(z.int().min(0).max(1000))
      .default(DEFAULT_AGENT_SCORE_THRESHOLD)
      .describe(`score_threshold offered to a new agent (default ${DEFAULT_AGENT_SCORE_THRESHOLD}, where the default CRITICAL band starts)`),
  })
  .meta({ description: "Defaults for the organization's new agents" });

export const OrganizationConfig = z
  .strictObject({
    // prefault, not default: the empty object is parsed so that every live default is filled in.
    live: LiveSettings.prefault({}),
    reserved_ips: z
      .array(Ipv4OrNetwork)
      .max(10_000)
      .default([])
      .describe("The organization's own addresses: never reportable by it, never blockable in its feeds"),
    blocking_roule: BlockingRule.optional(),
    agent_defaults: AgentDefaults.prefault({}),
  })
  .meta({ description: 'Organization settings document (spec 2.12)' });
export type OrganizationConfig = z.infer<typeof OrganizationConfig>;

const BAND_ORDER = ['low_score', 'medium_score', 'high_score', 'critical_score'] as const;

/**
 * The score bands of a document that overlap the band below them: LOW, MEDIUM, HIGH and CRITICAL
 * may touch (`[1, 60]`, `[60, 120]`: 60 is MEDIUM) but a band may not start below the end of the
 * previous one. Each issue names the later band.
 */
export function bandOverlaps(live: Pick<LiveSettings, (typeof BAND_ORDER)[number]>): Array<{ path: (typeof BAND_ORDER)[number]; message: string }> {
  const out: Array<{ path: (typeof BAND_ORDER)[number]; message: string }> = [];
  for (let i = 1; i < BAND_ORDER.length; i += 1) {
    const below = BAND_ORDER[i - 1]!;
    const band = BAND_ORDER[i]!;
    const [, belowMax] = live[below];
    const [min] = live[band];
    if (min < belowMax) out.push({ path: band, message: `overlaps ${below} [${live[below].join(', ')}]: ${band} must start at ${belowMax} or above` });
  }
  return out;
}

/** The body of `PUT /organization/config`: a document whose score bands do not overlap. */
export const OrganizationConfigUpdate = OrganizationConfig.superRefine((doc, ctx) => {
  for (const o of bandOverlaps(doc.live)) ctx.addIssue({ code: 'custom', path: ['live', o.path], message: o.message });
});

/**
 * The organization document as agents receive it (sync hello and settings_changed): without
 * `agent_defaults`, which is the console's and which an agent built before it (a strict
 * document) would refuse; an agent that knows it fills in the default.
 */
export function organizationForAgents(doc: OrganizationConfig): OrganizationConfig {
  const { agent_defaults: _console, ...rest } = doc;
  return rest as OrganizationConfig;
}
