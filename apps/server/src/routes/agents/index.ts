import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.ts';
import { agentFeedbackRoute } from './feedback.ts';
import { agentKeyRoutes } from './keys.ts';
import { agentRegistrationRoutes } from './registration.ts';
import { agentSettingsRoutes } from './settings.ts';
import { agentSyncRoute } from '../../sync/route.ts';

/** Agents: registration, keys, settings documents, feedback and the live sync channel. */
export const agentRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  await app.register(agentRegistrationRoutes, { context });
  await app.register(agentKeyRoutes, { context });
  await app.register(agentSettingsRoutes, { context });
  await app.register(agentFeedbackRoute, { context });
  await app.register(agentSyncRoute, { context });
};
