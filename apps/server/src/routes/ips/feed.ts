import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { IpsFeedQuery, Ipv4Page, ROLE } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { chargeFeedPage } from '../../plugins/coins.ts';
import { ipv4FeedPage } from '../../services/ipv4/feed.ts';
import { plainJson } from '../../plugins/plain-json.ts';

/** `GET /ips`: the IPv4 feed as the original clients page it (decisions.md, Compatibility). */
export const ipsFeedRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/ips',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'feed' } },
      schema: {
        tags: ['ipv4'],
        summary: 'IPv4 feed page: records with ts strictly greater than ts, ordered by (ts, id)',
        querystring: IpsFeedQuery,
        response: { 200: Ipv4Page },
      },
      serializerCompiler: plainJson,
    },
    async (request) => {
      const page = await ipv4FeedPage(context.store, principalOf(request), request.query);
      // The "nothing new" poll costs nothing.
      chargeFeedPage(request, page.body.length);
      return page;
    },
  );
};
