import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { DecisionBody, DomainLookupQuery, DomainPage, DomainParams, DomainRecord, DomainReportBody, DomainsFeedQuery, ROLE } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { plainJson } from '../../plugins/plain-json.ts';
import { domainRecord } from '../../services/indicators.ts';
import { normalizeDomain } from '../../services/indicator-names.ts';
import { NO_BODY, EMPTY } from '../indicator-common.ts';
import { decideNamed, lookupNamed, namedFeed, reportNamed } from '../named-indicator-routes.ts';

/** Spec 4.4 (except the score list): domain reports, decisions, the feed and look-ups. */
export const domainsRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.post(
    '/domains',
    {
      config: { rampart: { minRole: ROLE.contributor, coin: 'report' } },
      schema: { tags: ['domains'], summary: 'Report a domain (acknowledged once stored)', body: DomainReportBody, response: { 200: EMPTY } },
    },
    async (request, reply) => {
      await reportNamed(context, request, 'domain', normalizeDomain(request.body.domain, 'body.domain'), request.body);
      return reply.status(200).send(NO_BODY);
    },
  );

  app.put(
    '/domains/:domain_name',
    {
      config: { rampart: { minRole: ROLE.contributor, coin: 'decision' } },
      schema: { tags: ['domains'], summary: "Set the organization's decision on a domain", params: DomainParams, body: DecisionBody, response: { 200: EMPTY } },
    },
    async (request, reply) => {
      await decideNamed(context, request, 'domain', normalizeDomain(request.params.domain_name, 'params.domain_name'), request.body.decision);
      return reply.status(200).send(NO_BODY);
    },
  );

  app.get(
    '/domains',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'feed' } },
      schema: { tags: ['domains'], summary: 'Domain feed page: records with ts strictly greater than ts, ordered by (ts, id)', querystring: DomainsFeedQuery, response: { 200: DomainPage } },
      serializerCompiler: plainJson,
    },
    async (request) => {
      const page = await namedFeed(context, request, 'domain', request.query, domainRecord);
      return { header: { type: 'Domain' as const, ...page.header }, body: page.body };
    },
  );

  app.get(
    '/domains/:domain_name',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'lookup' } },
      schema: { tags: ['domains'], summary: 'Look up a domain', params: DomainParams, querystring: DomainLookupQuery, response: { 200: DomainRecord } },
      serializerCompiler: plainJson,
    },
    async (request) =>
      lookupNamed(context, request, 'domain', normalizeDomain(request.params.domain_name, 'params.domain_name'), request.query.explain === 'yes', domainRecord),
  );
};
