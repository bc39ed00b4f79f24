import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { API_BASE, ApiError, ROLE, Stix2Bundle, Stix2Params, Stix2Query } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { stixBundle, stixFactsFor } from '../../services/stix/stix.ts';
import { stix21Bundle } from '../../services/stix/stix21.ts';
import { orgView, visibleBefore } from '../../services/stix/taxii-sources.ts';
import { repriceTo } from '../indicator-common.ts';

/** `GET /stix2/{id}`: a STIX 2.0 bundle (2.1 with `?spec_version=2.1`) for an IPv4 address, a domain, a URL or a file digest. */
export const stixRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/stix2/:stix2id',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'stix' } },
      schema: {
        tags: ['tools'],
        summary: 'STIX 2.0 (or, with spec_version=2.1, STIX 2.1) bundle for an indicator: an IPv4 address, a domain, a URL (URL-encoded) or an MD5/SHA1/SHA256 digest',
        params: Stix2Params,
        querystring: Stix2Query,
        response: { 200: Stix2Bundle },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const id = request.params.stix2id.trim();
      if (!id) throw new ApiError('validation_failed', 'params.stix2id: empty', { errors: [{ path: 'params.stix2id', message: 'empty' }] });
      const priceAsDeepScan = () => repriceTo(context, request, context.config.coinPrices.deep_scan);
      const facts = await stixFactsFor(context.store, principal.org, id, priceAsDeepScan);
      if (request.query.spec_version === '2.0') return stixBundle(facts);
      // The newest version of the indicator's object as the TAXII collections serve it now.
      const view = await orgView(context.store, principal.org);
      const origin = (context.config.publicUrl ?? `${request.protocol}://${request.host}`).replace(/\/+$/, '');
      return stix21Bundle(facts.state, view.lowestScore, visibleBefore(principal.org, Math.floor(Date.now() / 1000)), `${origin}${API_BASE}`, facts.archived);
    },
  );
};
