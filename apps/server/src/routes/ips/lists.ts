import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FlatParams, FlatQuery, Ipv4ListParams, Ipv4ListQuery } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { FLAT_CSV_HEADER } from '../../services/ipv4/csv.ts';
import { sendTextList } from '../text-list-reply.ts';
import { checkInCaller } from '../../services/agents/checkin.ts';

const text = z.string().describe('text/plain');

/** `GET /ipv4/{min_score}` and `GET /flat/{min_score}`: the caller's blockable addresses as text. */
export const ipv4ListRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/ipv4/:min_score',
    {
      config: { rampart: { coin: 'list' } },
      schema: {
        tags: ['ipv4'],
        summary: 'Addresses whose live score (v3.2, now) reaches min_score after decisions; 10,000 per page, next page in the next_page header',
        params: Ipv4ListParams,
        querystring: Ipv4ListQuery,
        response: { 200: text },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { min_score } = request.params;
      const { format, agid, gaid, plugin, page } = request.query;
      // `agid` is the list client's own check-in, `gaid` an agent polling with a member key.
      await checkInCaller(context.store, principal, agid ?? gaid, principal.agent || agid ? 'ipv4' : 'feed', plugin);
      const list = await context.ipv4Lists.addresses(principal.org, min_score);
      const filters = { list: 'ipv4', min_score };
      return sendTextList(request, reply, { ...list, cursors: context.cursors, filters, page, paginate: true, format: format === 'LIST' ? 'comma' : 'lines' });
    },
  );

  app.get(
    '/flat/:min_score',
    {
      config: { rampart: { coin: 'list' } },
      schema: {
        tags: ['ipv4'],
        summary: `Every address whose live score reaches min_score, streamed in one response: CSV (${FLAT_CSV_HEADER}) or list=YES for a comma list`,
        params: FlatParams,
        querystring: FlatQuery,
        response: { 200: text },
      },
    },
    async (request, reply) => {
      const { org } = principalOf(request);
      const { min_score } = request.params;
      const commaList = request.query.list === 'YES';
      const list = commaList ? await context.ipv4Lists.addresses(org, min_score) : await context.ipv4Lists.csv(org, min_score);
      const filters = { list: 'flat', min_score };
      return sendTextList(request, reply, { ...list, cursors: context.cursors, filters, paginate: false, format: commaList ? 'comma' : 'lines' });
    },
  );
};
