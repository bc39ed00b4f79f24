import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { IpLookupQuery, IpParams, Ipv4Page } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { plainJson } from '../../plugins/plain-json.ts';
import { lookupIpv4 } from '../../services/ipv4/lookup.ts';

/** `GET /ips/{ipv4}`: the records holding the address, most specific first (services/ipv4/lookup.ts). */
export const ipsLookupRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/ips/:ipv4',
    {
      config: { rampart: { coin: 'lookup' } },
      schema: {
        tags: ['ipv4'],
        summary: 'Look up one IPv4 address: its record and the held networks containing it (explain=yes adds the score components)',
        params: IpParams,
        querystring: IpLookupQuery,
        response: { 200: Ipv4Page },
      },
      serializerCompiler: plainJson,
    },
    // Not async: a look-up answered at once (lookupIpv4) is sent without a promise.
    (request) => lookupIpv4(context.store, context.ipv4Mirror, principalOf(request), request.params.ipv4, { full: request.query.full === 'yes', explain: request.query.explain === 'yes' }),
  );
};
