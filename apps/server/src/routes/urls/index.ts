import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { DecisionBody, UrlLookupQuery, UrlPage, UrlParams, UrlRecord, UrlReportBody, UrlsFeedQuery, ROLE } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { plainJson } from '../../plugins/plain-json.ts';
import { urlRecord } from '../../services/indicators.ts';
import { normalizeUrl } from '../../services/indicator-names.ts';
import { NO_BODY, EMPTY } from '../indicator-common.ts';
import { decideNamed, lookupNamed, namedFeed, reportNamed } from '../named-indicator-routes.ts';

/** Spec 4.5 (except the score list): URL reports, decisions, the feed and look-ups. */
export const urlsRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.post(
    '/urls',
    {
      config: { rampart: { minRole: ROLE.contributor, coin: 'report' } },
      schema: { tags: ['urls'], summary: 'Report a URL (acknowledged once stored)', body: UrlReportBody, response: { 200: EMPTY } },
    },
    async (request, reply) => {
      await reportNamed(context, request, 'url', normalizeUrl(request.body.url, 'body.url'), request.body);
      return reply.status(200).send(NO_BODY);
    },
  );

  app.put(
    '/urls/:url',
    {
      config: { rampart: { minRole: ROLE.contributor, coin: 'decision' } },
      schema: { tags: ['urls'], summary: "Set the organization's decision on a URL", params: UrlParams, body: DecisionBody, response: { 200: EMPTY } },
    },
    async (request, reply) => {
      await decideNamed(context, request, 'url', normalizeUrl(request.params.url, 'params.url'), request.body.decision);
      return reply.status(200).send(NO_BODY);
    },
  );

  app.get(
    '/urls',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'feed' } },
      schema: { tags: ['urls'], summary: 'URL feed page: records with ts strictly greater than ts, ordered by (ts, id)', querystring: UrlsFeedQuery, response: { 200: UrlPage } },
      serializerCompiler: plainJson,
    },
    async (request) => {
      const page = await namedFeed(context, request, 'url', request.query, urlRecord);
      return { header: { type: 'URL' as const, ...page.header }, body: page.body };
    },
  );

  app.get(
    '/urls/:url',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'lookup' } },
      schema: { tags: ['urls'], summary: 'Look up a URL (URL-encoded in the path)', params: UrlParams, querystring: UrlLookupQuery, response: { 200: UrlRecord } },
      serializerCompiler: plainJson,
    },
    async (request) =>
      lookupNamed(context, request, 'url', normalizeUrl(request.params.url, 'params.url'), request.query.explain === 'yes', urlRecord),
  );
};
