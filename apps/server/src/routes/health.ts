import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../context.ts';

const Health = z.object({ status: z.enum(['ok', 'unavailable']), store: z.enum(['postgres', 'pglite']).optional() });

/** Probes outside the API: liveness (process answers) and readiness (store answers). */
export const healthRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  // Probes never count against, nor wait for, the request rate limit.
  const publicRoute = { rampart: { auth: 'public' as const }, rateLimit: false as const };
  app.get('/healthz', { config: publicRoute, schema: { hide: true, response: { 200: Health } } }, async () => ({ status: 'ok' as const }));
  app.get('/readyz', { config: publicRoute, schema: { hide: true, response: { 200: Health, 503: Health } } }, async (request, reply) => {
    try {
      await context.store.db.query('select 1');
      return { status: 'ok' as const, store: context.store.db.kind };
    } catch (err) {
      request.log.warn({ err }, 'store not reachable');
      return reply.status(503).send({ status: 'unavailable' as const, store: context.store.db.kind });
    }
  });
};
