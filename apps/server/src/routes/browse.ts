import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { DecisionListQuery, DecisionListResponse, IndicatorListQuery, IndicatorListResponse } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { listDecisions, listIndicators } from '../services/operators/browse.ts';

/** `GET /decisions` and `GET /indicators`: the caller's organization's decisions and what it sees. Free, any role. */
export const browseRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const deps = { store: context.store, cursors: context.cursors };
  const now = () => Math.floor(Date.now() / 1000);
  app.get(
    '/decisions',
    { schema: { tags: ['browse'], summary: "The organization's decisions of every kind, newest first, filtered and paged", querystring: DecisionListQuery, response: { 200: DecisionListResponse } } },
    async (request) => listDecisions(deps, principalOf(request).org, request.query, now()),
  );
  app.get(
    '/indicators',
    { schema: { tags: ['browse'], summary: 'Indicators of one kind as the organization sees them, newest first, filtered and paged', querystring: IndicatorListQuery, response: { 200: IndicatorListResponse } } },
    async (request) => listIndicators(deps, principalOf(request).org, request.query, now()),
  );
};
