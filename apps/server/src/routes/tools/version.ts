import { hostname } from 'node:os';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { VersionRecord } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';

/**
 * `GET /version`: the build date, this host, and a store round trip: `m` is how many
 * milliseconds the store took to answer, `e` the store error ('' when healthy).
 */
export const versionRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/version',
    {
      config: { rampart: { auth: 'public' } },
      schema: { tags: ['tools'], summary: 'Build and health of this service (no key needed)', security: [], response: { 200: VersionRecord } },
    },
    async () => {
      const started = performance.now();
      let error = '';
      try {
        await context.store.connection.ping();
      } catch (err) {
        error = err instanceof Error ? err.message.slice(0, 200) : 'store unreachable';
      }
      return {
        version: context.buildDate,
        is_master: context.config.databaseUrl ? 'false' : 'true',
        application: 'rampart',
        RMP_instance: context.config.instance,
        hostname: hostname(),
        m: Math.round(performance.now() - started),
        e: error,
      };
    },
  );
};
