import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../context.ts';

const Health = z.object({
  status: z.enum(['ok', 'unavailable']),
  store: z.enum(['postgres', 'pglite']).optional(),
  /** Why the replica is not ready: the store does not answer, or live events cannot arrive. */
  reason: z.enum(['store_unreachable', 'listener_down']).optional(),
});

/**
 * Probes outside the API: liveness (process answers) and readiness (store answers and live
 * events can arrive: a replica whose LISTEN session is down would serve requests but leave its
 * agents deaf, so it is taken out of rotation until the session is back).
 */
export const healthRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  // Probes never count against, nor wait for, the request rate limit.
  const publicRoute = { rampart: { auth: 'public' as const }, rateLimit: false as const };
  app.get('/healthz', { config: publicRoute, schema: { hide: true, response: { 200: Health } } }, async () => ({ status: 'ok' as const }));
  app.get('/readyz', { config: publicRoute, schema: { hide: true, response: { 200: Health, 503: Health } } }, async (request, reply) => {
    const { connection } = context.store;
    const store = connection.kind;
    if (!connection.health().listening) return reply.status(503).send({ status: 'unavailable' as const, store, reason: 'listener_down' as const });
    try {
      await connection.ping();
      return { status: 'ok' as const, store };
    } catch (err) {
      request.log.warn({ err }, 'store not reachable');
      return reply.status(503).send({ status: 'unavailable' as const, store, reason: 'store_unreachable' as const });
    }
  });
};
