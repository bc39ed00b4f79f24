import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.ts';
import { organizationSettingsRoutes } from './settings.ts';

/** The caller's organization: its settings document. */
export const organizationRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  await app.register(organizationSettingsRoutes, { context });
};
