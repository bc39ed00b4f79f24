import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AgentParams, AgentSettingsDocument, ApiError, ROLE, SettingsHistoryEntry, SettingsHistoryQuery } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { auditActor } from '../../services/operators/audit.ts';
import { agentSettingsHistory, readAgentSettings, replaceAgentSettings } from '../../services/agents/settings-documents.ts';

export const SETTINGS_VERSION_HEADER = 'x-settings-version';

/**
 * The agent settings document (2.11 + running). Admins read it with secrets masked and replace
 * it; the agent itself, with its own key, reads it unmasked (it needs its secrets to run).
 */
export const agentSettingsRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/agents/:agid/config',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: {
        tags: ['agents'],
        summary: 'The agent settings document (admins: secrets masked; the agent itself: unmasked)',
        params: AgentParams,
        response: { 200: AgentSettingsDocument },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const self = principal.agent;
      if (self && self.gaid !== request.params.agid) throw new ApiError('forbidden', 'an agent key reads only its own settings');
      const { document, version } = await readAgentSettings(context.store, principal.org.id, request.params.agid, !self);
      reply.header(SETTINGS_VERSION_HEADER, String(version));
      return document;
    },
  );

  app.put(
    '/agents/:agid/config',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: {
        tags: ['agents'],
        summary: 'Replace the agent settings document (a masked secret keeps the stored one); pushed to the agent',
        params: AgentParams,
        body: AgentSettingsDocument,
        response: { 200: AgentSettingsDocument },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { document, version } = await replaceAgentSettings(
        { store: context.store, events: context.events, log: request.log },
        { orgId: principal.org.id, gaid: request.params.agid, document: request.body, actor: auditActor(principal, request.ip) },
      );
      reply.header(SETTINGS_VERSION_HEADER, String(version));
      return document;
    },
  );

  app.get(
    '/agents/:agid/config/history',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: {
        tags: ['agents'],
        summary: 'Changes of the agent settings document, newest first (who, when, which paths; never values)',
        params: AgentParams,
        querystring: SettingsHistoryQuery,
        response: { 200: z.array(SettingsHistoryEntry) },
      },
    },
    async (request) => {
      return agentSettingsHistory(context.store, principalOf(request).org.id, request.params.agid, request.query.limit);
    },
  );
};
