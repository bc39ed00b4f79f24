import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  DigestParams,
  FileDecisionBody,
  FileLookupQuery,
  FilePage,
  FileRecord,
  FileReportBody,
  FilesFeedQuery,
  ROLE,
} from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { plainJson } from '../../plugins/plain-json.ts';
import { principalOf } from '../../plugins/auth.ts';
import { chargeFeedPage } from '../../plugins/coins.ts';
import { fileFeedRows, lookupFile, reportFile } from '../../services/named/files.ts';
import { fileRecord } from '../../services/named/indicators.ts';
import { auditActor } from '../../services/operators/audit.ts';
import { applyDecision } from '../../services/decisions.ts';
import { chargeExtra, NO_BODY, EMPTY, feedUser } from '../indicator-common.ts';

/** Spec 4.3 (except the score list): file reports, decisions, the feed and look-ups. */
export const filesRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const { store } = context;

  app.post(
    '/files',
    {
      config: { rampart: { minRole: ROLE.contributor, coin: 'report' } },
      schema: { tags: ['files'], summary: 'Report a file (acknowledged once stored)', body: FileReportBody, response: { 200: EMPTY } },
    },
    async (request, reply) => {
      await reportFile(store, context.events, principalOf(request).org.id, request.body);
      context.rollups.countReports(principalOf(request).org.id);
      return reply.status(200).send(NO_BODY);
    },
  );

  app.put(
    '/files/:digest',
    {
      config: { rampart: { minRole: ROLE.contributor, coin: 'decision' } },
      schema: { tags: ['files'], summary: "Set the organization's decision on a file", params: DigestParams, body: FileDecisionBody, response: { 200: EMPTY } },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { decision, reason } = request.body;
      await applyDecision(context, principal.org.id, auditActor(principal, request.ip), { kind: 'file', value: request.params.digest, decision: decision as -1 | 0 | 1, reason });
      return reply.status(200).send(NO_BODY);
    },
  );

  app.get(
    '/files',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'feed' } },
      schema: {
        tags: ['files'],
        summary: 'File feed page: records with ts strictly greater than ts, ordered by (ts, id)',
        querystring: FilesFeedQuery,
        response: { 200: FilePage },
      },
      serializerCompiler: plainJson,
    },
    async (request) => {
      const principal = principalOf(request);
      const q = request.query;
      const rows = await fileFeedRows(store, principal.org, q);
      // The "nothing new" poll costs nothing.
      chargeFeedPage(request, rows.length);
      return {
        header: { type: 'Malware' as const, version: 4 as const, ts: q.ts, next_ts: rows.at(-1)?.ts ?? q.ts, page_size: q.page_size, user: await feedUser(context, request) },
        body: rows.map(fileRecord),
      };
    },
  );

  app.get(
    '/files/:digest',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'lookup' } },
      schema: { tags: ['files'], summary: 'Look up a file by MD5, SHA1 or SHA256 (any case)', params: DigestParams, querystring: FileLookupQuery, response: { 200: FileRecord } },
      serializerCompiler: plainJson,
    },
    async (request) =>
      lookupFile(store, principalOf(request).org, request.params.digest, {
        deep: request.query.deep_scan === 'YES',
        explain: request.query.explain === 'yes',
        chargeDeepScan: () => chargeExtra(context, request, context.config.coinPrices.deep_scan),
      }),
  );
};
