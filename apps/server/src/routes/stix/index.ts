import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ApiError, ROLE, Stix2Bundle, Stix2Params } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { stixBundle, stixFactsFor } from '../../services/stix.ts';
import { repriceTo } from '../indicator-common.ts';

/** `GET /stix2/{id}`: a STIX 2.0 bundle for an IPv4 address, a domain, a URL or a file digest. */
export const stixRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/stix2/:stix2id',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'stix' } },
      schema: {
        tags: ['tools'],
        summary: 'STIX 2.0 bundle for an indicator: an IPv4 address, a domain, a URL (URL-encoded) or an MD5/SHA1/SHA256 digest',
        params: Stix2Params,
        response: { 200: Stix2Bundle },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const id = request.params.stix2id.trim();
      if (!id) throw new ApiError('validation_failed', 'params.stix2id: empty', { errors: [{ path: 'params.stix2id', message: 'empty' }] });
      const priceAsDeepScan = () => repriceTo(context, request, context.config.coinPrices.deep_scan);
      return stixBundle(await stixFactsFor(context.store, principal.org, id, priceAsDeepScan));
    },
  );
};
