import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ApiError, OverviewResponse } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { OverviewStore } from '../store/overview.ts';
import { visibleUpTo } from '../services/envelope.ts';

/** `GET /overview`: what the console's first page shows. Free, any role. */
export const overviewRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const overview = new OverviewStore(context.store.db);
  app.get('/overview', { schema: { tags: ['tools'], summary: 'Figures for the console overview', response: { 200: OverviewResponse } } }, async (request) => {
    const principal = principalOf(request);
    const now = Math.floor(Date.now() / 1000);
    const [histogram, reports, org] = await Promise.all([overview.ipv4Histogram(now, visibleUpTo(principal.org, now)), overview.reportsSince(principal.org.id, now - 86_400), context.store.orgs.byId(principal.org.id)]);
    if (!org) throw new ApiError('unauthorized', 'the organization of this key no longer exists');
    const { credit_tokens, debit_tokens } = request.server.coinLedger.shown(org);
    return {
      at: now,
      ipv4: { total: histogram.reduce((a, b) => a + b, 0), histogram },
      reports_24h: reports,
      coins: { credit_tokens, debit_tokens, balance: credit_tokens - debit_tokens },
    };
  });
};
