import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { OverviewResponse } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { overviewOf } from '../services/overview.ts';

/** `GET /overview`: what the console's first page shows. Free, any role. */
export const overviewRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get('/overview', { schema: { tags: ['tools'], summary: 'Figures for the console overview', response: { 200: OverviewResponse } } }, async (request) =>
    overviewOf(context.store, request.server.coinLedger, principalOf(request).org),
  );
};
