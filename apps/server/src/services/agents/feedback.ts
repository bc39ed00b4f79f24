import { ApiError, REPORTED_PLUGIN_NAMES, type AgentFeedbackBody, type AgentSettingsDocument } from '@rampart/contracts';
import type { Organization, Store } from '../../store/index.ts';
import { attestation } from './drift.ts';
import type { Ipv4Lists } from '../ipv4/lists.ts';
import { namedListCount } from '../named/indicator-score-lists.ts';

const FIXED_NAMES: ReadonlySet<string> = new Set(REPORTED_PLUGIN_NAMES);

/**
 * Whether an agent may report under `plugin`: a fixed name, or a key of the `ips` or `ids` object
 * of its registered configuration, exactly as registered (decisions.md, Compatibility: the
 * original client posts under its own keys, e.g. `checkpoint_securexl`).
 */
export function reportableName(document: AgentSettingsDocument, plugin: string): boolean {
  if (FIXED_NAMES.has(plugin)) return true;
  const configured = (section: unknown) => typeof section === 'object' && section !== null && Object.hasOwn(section, plugin);
  return configured(document.ips) || configured(document.ids);
}

/**
 * Records a feedback (a check-in, and what the agent says one plugin enforces). Not found when
 * the agent is not this organization's; 400 naming `body.plugin` when the name is neither fixed
 * nor a key of that agent's configuration.
 */
export async function recordFeedback(deps: { store: Store; ipv4Lists: Ipv4Lists }, org: Organization, body: AgentFeedbackBody, nowSeconds: number): Promise<void> {
  const { store } = deps;
  const orgId = org.id;
  const agent = await store.agents.get(orgId, body.agid);
  if (!agent) throw new ApiError('not_found', `no agent ${body.agid} in this organization`);
  if (!reportableName(agent.document, body.plugin)) {
    const message = `not a name this agent reports under: neither a fixed name nor a key of its configuration's ips or ids`;
    throw new ApiError('validation_failed', `body.plugin: ${message}`, { errors: [{ path: 'body.plugin', message }] });
  }
  const enforced = Array.isArray(body.blacklist) ? body.blacklist.length : (body.blacklist ?? null);
  // Read back by an enforcer: compared with the server's own list at the agent's threshold, the
  // IPv4 list for an IPv4 enforcer, the score list of domains or URLs for `<label>/domain` and
  // `<label>/url`. A file-digest enforcer holds every digest of each file (three lists merged):
  // its figures are recorded without a comparison.
  const held = body.held;
  const threshold = Math.max(1, agent.document.score_threshold);
  const kind = body.plugin.includes('/') ? body.plugin.slice(body.plugin.lastIndexOf('/') + 1) : 'ipv4';
  const listed =
    held === undefined ? undefined
    : kind === 'ipv4' ? await deps.ipv4Lists.count(org, threshold)
    : kind === 'domain' || kind === 'url' ? await namedListCount(store, kind, org, threshold, nowSeconds)
    : undefined;
  const attested = held === undefined || listed === undefined ? undefined : attestation(agent.enforced[body.plugin], agent.document, listed, { ...body, held }, nowSeconds);
  const recorded = await store.agents.recordEnforcement(orgId, body.agid, 'feedback', {
    plugins: {
      [body.plugin]: {
        enforced,
        code: body.code ?? null,
        score_threshold: body.score_threshold ?? null,
        healthy: body.state === undefined ? null : body.state !== 'failed',
        state: body.state ?? null,
        error: body.error ?? null,
        at: nowSeconds,
        ...(attested ? { attestation: attested } : {}),
      },
    },
    hostname: body.hostname,
    capabilities: body.capabilities,
  });
  if (!recorded) throw new ApiError('not_found', `no agent ${body.agid} in this organization`);
}
