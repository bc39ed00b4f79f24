import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { OrganizationConfig, OrganizationConfigUpdate, ROLE, SettingsHistoryEntry, SettingsHistoryQuery } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { auditActor } from '../../services/operators/audit.ts';
import { historyEntries, readOrganizationSettings, replaceOrganizationSettings } from '../../services/agents/settings-documents.ts';
import { SETTINGS_VERSION_HEADER } from '../agents/settings.ts';

/** The organization settings document (2.12, every default filled in); admins only. */
export const organizationSettingsRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/organization/config',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: { tags: ['organization'], summary: 'The organization settings document, with defaults', response: { 200: OrganizationConfig } },
    },
    async (request, reply) => {
      const { document, version } = await readOrganizationSettings(context.store, principalOf(request).org.id);
      reply.header(SETTINGS_VERSION_HEADER, String(version));
      return document;
    },
  );

  app.put(
    '/organization/config',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: {
        tags: ['organization'],
        summary: "Replace the organization settings document; pushed to the organization's agents",
        body: OrganizationConfigUpdate,
        response: { 200: OrganizationConfig },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { document, version } = await replaceOrganizationSettings(
        { store: context.store, events: context.events, log: request.log },
        { orgId: principal.org.id, document: request.body, actor: auditActor(principal, request.ip) },
      );
      reply.header(SETTINGS_VERSION_HEADER, String(version));
      return document;
    },
  );

  app.get(
    '/organization/config/history',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: {
        tags: ['organization'],
        summary: 'Changes of the organization settings document, newest first',
        querystring: SettingsHistoryQuery,
        response: { 200: z.array(SettingsHistoryEntry) },
      },
    },
    async (request) => historyEntries(await context.store.settings.history(principalOf(request).org.id, 'organization', request.query.limit)),
  );
};
