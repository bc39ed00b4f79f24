import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.ts';
import { ipsFeedRoute } from './ips/feed.ts';
import { ipsLookupRoute } from './ips/lookup.ts';
import { ipsReportRoute } from './ips/report.ts';
import { ipv4ListRoutes } from './ips/lists.ts';
import { PENDING_ROUTES, pendingRoutes } from './pending.ts';
import { versionRoute } from './tools/version.ts';
import { infoRoutes } from './tools/info.ts';
import { infoRoutes } from './tools/info.ts';
import { keyRoutes } from './keys/index.ts';
import { meRoute } from './me.ts';
import { overviewRoute } from './overview.ts';
import { agentRoutes } from './agents/index.ts';
import { organizationRoutes } from './organization/index.ts';

/** Every route under /api/v1, one plugin per resource. */
export const apiRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  await app.register(versionRoute, { context });
  await app.register(infoRoutes, { context });
  await app.register(infoRoutes, { context });
  await app.register(meRoute, { context });
  await app.register(overviewRoute, { context });
  await app.register(keyRoutes, { context });
  await app.register(ipsFeedRoute, { context });
  await app.register(ipsReportRoute, { context });
  await app.register(ipsLookupRoute, { context });
  await app.register(ipv4ListRoutes, { context });
  await app.register(agentRoutes, { context });
  await app.register(organizationRoutes, { context });
  await app.register(pendingRoutes, { routes: PENDING_ROUTES });
};
