import type { FastifyBaseLogger } from 'fastify';
import {
  ApiError,
  maskSecrets,
  mergeMaskedSecrets,
  type AgentSettingsDocument,
  type OrganizationConfig,
  type SettingsHistoryEntry,
} from '@rampart/contracts';
import { agentSubject, type AuditActor, type AuditEntry, type Store } from '../../store/index.ts';
import { audit } from '../operators/audit.ts';
import { anchorPolicyChange } from '../../store/ipv4-ingest.ts';
import { V32_INGEST_RULES } from '../ipv4/ingest.ts';
import { policyChangeScope } from '../ipv4/policy.ts';
import type { EventBus, PlatformEvent } from '../events.ts';

/*
 * Reading and replacing the two settings documents. Admins see secrets masked and may write
 * the mask back to keep a stored secret; the agent itself reads its own document unmasked.
 * Each replacement is one transaction (document + version + audit); the change is published
 * only after it committed, so a listener that reads the document sees the new one.
 */

export interface SettingsDeps {
  store: Store;
  events: EventBus;
  log: FastifyBaseLogger;
}

export interface Versioned<T> {
  document: T;
  version: number;
}

async function publish(deps: SettingsDeps, event: PlatformEvent): Promise<void> {
  // The change is committed: a lost notification must not turn it into an error for the admin.
  // Agents re-read their documents on reconnect, so they converge anyway.
  await deps.events.publish(event).catch((err: unknown) => deps.log.error({ err, event: event.type }, 'could not publish settings change'));
}

export async function readAgentSettings(store: Store, orgId: number, gaid: string, masked: boolean): Promise<Versioned<AgentSettingsDocument>> {
  const agent = await store.agents.get(orgId, gaid);
  if (!agent) throw new ApiError('not_found', `no agent ${gaid} in this organization`);
  return { document: masked ? maskSecrets(agent.document) : agent.document, version: agent.version };
}

export async function replaceAgentSettings(
  deps: SettingsDeps,
  input: { orgId: number; gaid: string; document: AgentSettingsDocument; actor: AuditActor },
): Promise<Versioned<AgentSettingsDocument>> {
  if (input.document.gaid !== input.gaid) {
    throw new ApiError('validation_failed', 'the gaid of a settings document cannot change', {
      errors: [{ path: 'body.gaid', message: `must be ${input.gaid}, the agent of this path` }],
    });
  }
  const replaced = await deps.store.agents.replaceDocument(input.orgId, input.gaid, (stored) => mergeMaskedSecrets(input.document, stored), input.actor.username);
  if (!replaced) throw new ApiError('not_found', `no agent ${input.gaid} in this organization`);
  await auditSettings(deps.store, input.actor, input.orgId, 'agent.configure', input.gaid, agentSubject(input.gaid));
  await publish(deps, { type: 'settings_changed', org_id: input.orgId, subject: 'agent', gaid: input.gaid, version: replaced.version });
  return { document: maskSecrets(replaced.document), version: replaced.version };
}

export async function readOrganizationSettings(store: Store, orgId: number): Promise<Versioned<OrganizationConfig>> {
  const { document, version } = await store.settings.organization(orgId);
  return { document: maskSecrets(document), version };
}

export async function replaceOrganizationSettings(
  deps: SettingsDeps,
  input: { orgId: number; document: OrganizationConfig; actor: AuditActor },
): Promise<Versioned<OrganizationConfig>> {
  let redelivered = 0;
  const replaced = await deps.store.settings.replaceOrganization(
    input.orgId,
    (current) => mergeMaskedSecrets(input.document, current),
    input.actor.username,
    // Records whose blocking the change alters reach the organization's followers again, in the same transaction.
    async (tx, before, after) => {
      redelivered = await anchorPolicyChange(tx, input.orgId, policyChangeScope(before, after), V32_INGEST_RULES);
    },
  );
  if (replaced.changed) {
    await auditSettings(deps.store, input.actor, input.orgId, 'organization.settings', '', 'organization');
    await publish(deps, { type: 'settings_changed', org_id: input.orgId, subject: 'organization', version: replaced.version });
  }
  if (redelivered > 0) await publish(deps, { type: 'feed_changed', org_id: input.orgId, kind: 'ipv4', ts: Math.floor(Date.now() / 1000) });
  return { document: maskSecrets(replaced.document), version: replaced.version };
}

/** The audit log entry of a settings change: the version and the paths its history recorded (never values: secrets among them). */
async function auditSettings(store: Store, actor: AuditActor, orgId: number, action: string, target: string, subject: string): Promise<void> {
  const [last] = await store.settings.history(orgId, subject, 1);
  await audit(store, actor, { orgId, action, target, detail: { version: last?.version ?? null, changed_fields: last?.changed_fields ?? [] } });
}

export function historyEntries(rows: AuditEntry[]): SettingsHistoryEntry[] {
  return rows.map((r) => ({ version: r.version, changed_by: r.changed_by, changed_at: r.changed_at, changed_fields: r.changed_fields }));
}

/** The audit trail of an agent's settings, newest first; 404 for an agent the organization does not have. */
export async function agentSettingsHistory(store: Store, orgId: number, gaid: string, limit: number): Promise<SettingsHistoryEntry[]> {
  if (!(await store.agents.get(orgId, gaid))) throw new ApiError('not_found', `no agent ${gaid} in this organization`);
  return historyEntries(await store.settings.history(orgId, agentSubject(gaid), limit));
}
