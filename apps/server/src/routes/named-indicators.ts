import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import {
  DecisionBody,
  DomainLookupQuery,
  DomainPage,
  DomainParams,
  DomainRecord,
  DomainReportBody,
  DomainsFeedQuery,
  ROLE,
  type ScoreExplanation,
  UrlLookupQuery,
  UrlPage,
  UrlParams,
  UrlRecord,
  UrlReportBody,
  UrlsFeedQuery,
} from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { chargeFeedPage } from '../plugins/coins.ts';
import { plainJson } from '../plugins/plain-json.ts';
import { domainRecord, urlRecord, type NamedRow } from '../services/named/indicators.ts';
import { normalizeDomain, normalizeUrl } from '../services/named/indicator-names.ts';
import { lookupNamed, namedFeedRows, reportNamed, type NamedKind } from '../services/named/named-indicators.ts';
import { auditActor } from '../services/operators/audit.ts';
import { applyDecision } from '../services/decisions.ts';
import { EMPTY, feedUser, NO_BODY } from './indicator-common.ts';

/** What differs between the domain and the URL routes: names, schemas, the normalizer, the record. */
interface NamedResource {
  kind: NamedKind;
  /** `/domains`, `/urls`. */
  path: string;
  /** The path parameter and the report body's field that hold the value. */
  param: string;
  field: string;
  tag: string;
  pageType: 'Domain' | 'URL';
  normalize: (value: string, path: string) => string;
  toRecord: (row: NamedRow) => { explain?: ScoreExplanation };
  schemas: { params: z.ZodType; report: z.ZodType; feedQuery: z.ZodType; lookupQuery: z.ZodType; page: z.ZodType; record: z.ZodType };
  summaries: { report: string; decide: string; feed: string; lookup: string };
}

/** Spec 4.4 (except the score list): domain reports, decisions, the feed and look-ups. */
export const DOMAINS: NamedResource = {
  kind: 'domain',
  path: '/domains',
  param: 'domain_name',
  field: 'domain',
  tag: 'domains',
  pageType: 'Domain',
  normalize: normalizeDomain,
  toRecord: domainRecord,
  schemas: { params: DomainParams, report: DomainReportBody, feedQuery: DomainsFeedQuery, lookupQuery: DomainLookupQuery, page: DomainPage, record: DomainRecord },
  summaries: {
    report: 'Report a domain (acknowledged once stored)',
    decide: "Set the organization's decision on a domain",
    feed: 'Domain feed page: records with ts strictly greater than ts, ordered by (ts, id)',
    lookup: 'Look up a domain',
  },
};

/** Spec 4.5 (except the score list): URL reports, decisions, the feed and look-ups. */
export const URLS: NamedResource = {
  kind: 'url',
  path: '/urls',
  param: 'url',
  field: 'url',
  tag: 'urls',
  pageType: 'URL',
  normalize: normalizeUrl,
  toRecord: urlRecord,
  schemas: { params: UrlParams, report: UrlReportBody, feedQuery: UrlsFeedQuery, lookupQuery: UrlLookupQuery, page: UrlPage, record: UrlRecord },
  summaries: {
    report: 'Report a URL (acknowledged once stored)',
    decide: "Set the organization's decision on a URL",
    feed: 'URL feed page: records with ts strictly greater than ts, ordered by (ts, id)',
    lookup: 'Look up a URL (URL-encoded in the path)',
  },
};

/** The four routes of one named-indicator resource (services/named/named-indicators.ts holds their rules). */
export function namedIndicatorRoutes(r: NamedResource): FastifyPluginAsyncZod<{ context: AppContext }> {
  const tags = [r.tag];
  const item = `${r.path}/:${r.param}`;
  return async (app, { context }) => {
    const { store, events } = context;
    const valueOf = (request: { params: unknown }) => r.normalize((request.params as Record<string, string>)[r.param]!, `params.${r.param}`);

    app.post(
      r.path,
      { config: { rampart: { minRole: ROLE.contributor, coin: 'report' } }, schema: { tags, summary: r.summaries.report, body: r.schemas.report, response: { 200: EMPTY } } },
      async (request, reply) => {
        const body = request.body as { confidence: number; tags?: string[] } & Record<string, unknown>;
        await reportNamed(store, events, r.kind, principalOf(request).org.id, r.normalize(body[r.field] as string, `body.${r.field}`), body);
        context.rollups.countReports(principalOf(request).org.id);
        return reply.status(200).send(NO_BODY);
      },
    );

    app.put(
      item,
      { config: { rampart: { minRole: ROLE.contributor, coin: 'decision' } }, schema: { tags, summary: r.summaries.decide, params: r.schemas.params, body: DecisionBody, response: { 200: EMPTY } } },
      async (request, reply) => {
        const principal = principalOf(request);
        const { decision, reason } = request.body as DecisionBody;
        await applyDecision(context, principal.org.id, auditActor(principal, request.ip), { kind: r.kind, value: valueOf(request), decision: decision as -1 | 0 | 1, reason });
        return reply.status(200).send(NO_BODY);
      },
    );

    app.get(
      r.path,
      {
        config: { rampart: { minRole: ROLE.reader, coin: 'feed' } },
        schema: { tags, summary: r.summaries.feed, querystring: r.schemas.feedQuery, response: { 200: r.schemas.page } },
        serializerCompiler: plainJson,
      },
      async (request) => {
        const query = request.query as { ts: number; page_size: number };
        const rows = await namedFeedRows(store, r.kind, principalOf(request).org, query);
        // The "nothing new" poll costs nothing.
        chargeFeedPage(request, rows.length);
        const header = { type: r.pageType, version: 4 as const, ts: query.ts, next_ts: rows.at(-1)?.ts ?? query.ts, page_size: query.page_size, user: await feedUser(context, request) };
        return { header, body: rows.map(r.toRecord) };
      },
    );

    app.get(
      item,
      {
        config: { rampart: { minRole: ROLE.reader, coin: 'lookup' } },
        schema: { tags, summary: r.summaries.lookup, params: r.schemas.params, querystring: r.schemas.lookupQuery, response: { 200: r.schemas.record } },
        serializerCompiler: plainJson,
      },
      async (request) => lookupNamed(store, r.kind, principalOf(request).org, valueOf(request), (request.query as { explain?: string }).explain === 'yes', r.toRecord),
    );
  };
}
