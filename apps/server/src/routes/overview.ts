import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { OverviewHistoryQuery, OverviewHistoryResponse, OverviewResponse } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { overviewOf } from '../services/operators/overview.ts';

/** `GET /overview`: what the console's first page shows; `/overview/history`: its figures over time. Free, any role. */
export const overviewRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get('/overview', { schema: { tags: ['tools'], summary: 'Figures for the console overview', response: { 200: OverviewResponse } } }, async (request) =>
    overviewOf(context.store, request.server.coinLedger, principalOf(request).org),
  );
  app.get(
    '/overview/history',
    {
      schema: {
        tags: ['tools'],
        summary: 'Figures over time: reports per hour, agents alive per hour, coins spent per day, indicators per band per day (stored rollups)',
        querystring: OverviewHistoryQuery,
        response: { 200: OverviewHistoryResponse },
      },
    },
    async (request) => context.rollups.history(principalOf(request).org, request.query.days),
  );
};
