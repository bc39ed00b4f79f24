import { z } from 'zod';
import { AgentIds, AgentIps } from './agent-integrations.ts';
import { AgentId, numberLike } from './primitives.ts';
import { secret } from './secret-fields.ts';

export const DEFAULT_AUTH_HEADER = 'Authorization';

/** '' is the specification's placeholder for an unset text field. */
const optionalUri = z
  .union([z.url({ protocol: /^https?$/ }).max(2048), z.literal('')])
  .optional();

const HeaderName = z.string().max(128).regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { message: 'not an HTTP header name' });

const agentConfigShape = {
  gaid: AgentId,
  ts: numberLike(z.int().min(0)).describe('Timestamp in milliseconds since the epoch'),
  score_threshold: numberLike(z.int().min(0).max(1000)).describe('Minimum live score at which the agent blocks'),
  start_from: numberLike(z.int().min(0)).describe('Starting index for processing'),
  version: z.string().min(1).max(64).regex(/^v/, { message: 'must begin with v' }).describe('Agent software version, beginning with v'),
  proxy: z.enum(['CLOUD', 'LOCAL']),
  sync_time: numberLike(z.int().min(1)).describe('Minutes between check-ins; alive means checked in within 2 x sync_time'),
  maximum_rules: numberLike(z.int().min(1)).describe('Upper bound of blocking rules'),
  api_url: optionalUri.describe('Primary IPv4 API endpoint'),
  api_url_bulk: optionalUri.describe('Bulk IP API endpoint'),
  api_url_feedback: optionalUri.describe('Feedback API endpoint'),
  auth_name: HeaderName.optional().describe(`Name of the authentication header (default ${DEFAULT_AUTH_HEADER})`),
  api_jwt_key: secret(z.string().max(8192).nullable().optional().describe('JWT used for API authentication; returned masked')),
  ids: AgentIds.optional(),
  ips: AgentIps.optional(),
};

/*
 * Top-level keys the schema does not know (e.g. an agent's `elk_link`) are kept and returned
 * when the document is read back: agents of other versions carry settings of their own. The
 * body limit bounds them; secrets among them are masked by name like any other.
 */
export const AgentConfig = z.looseObject(agentConfigShape).meta({ description: 'Agent configuration (spec 2.11); body of POST /agents' });
export type AgentConfig = z.infer<typeof AgentConfig>;

export const AgentRunning = z.enum(['yes', 'no']).describe('no: the agent withdraws its rules and stops enforcing and reporting, but keeps checking in');

export const AgentSettingsDocument = z
  .looseObject({ ...agentConfigShape, running: AgentRunning.default('yes') })
  .meta({ description: 'Agent-level settings document: the agent configuration plus running' });
export type AgentSettingsDocument = z.infer<typeof AgentSettingsDocument>;
