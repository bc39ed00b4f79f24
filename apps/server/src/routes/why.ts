import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { WhyQuery, WhyResponse } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { whyBlocked } from '../services/operators/why.ts';

/** `GET /why`: why one indicator is (or is not) blocked for the caller's organization now. Priced as a look-up. */
export const whyRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/why',
    {
      config: { rampart: { coin: 'lookup' } },
      schema: {
        tags: ['browse'],
        summary: 'Why is this blocked? The deciding decision or score, the reporting organizations, when it leaves each agent list, and which agents enforce it',
        querystring: WhyQuery,
        response: { 200: WhyResponse },
      },
    },
    async (request) => whyBlocked(context.store, principalOf(request).org, request.query, Math.floor(Date.now() / 1000)),
  );
};
