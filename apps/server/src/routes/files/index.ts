import { reanchoredScore } from '@rampart/scoring';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  ApiError,
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
import { delaySeconds, visibleTo } from '../../services/envelope.ts';
import { catalogFileType } from '../../services/file-type-catalog.ts';
import { explanation, fileRecord, v32Scorer } from '../../services/indicators.ts';
import { chargeExtra, NO_BODY, EMPTY, feedUser, notFound, nowSeconds } from '../indicator-common.ts';

function knownFileType(value: string, path: string): string {
  const name = catalogFileType(value);
  if (!name) throw new ApiError('validation_failed', `${path}: '${value}' is not one of GET /file_types`, { errors: [{ path, message: 'not one of GET /file_types' }] });
  return name;
}

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
      const principal = principalOf(request);
      const body = request.body;
      const outcome = await store.files.report(
        {
          orgId: principal.org.id,
          md5: body.md5,
          sha1: body.sha1,
          sha256: body.sha256,
          fileType: knownFileType(body.file_type, 'body.file_type'),
          fileName: body.file_name,
          fileBytes: body.file_bytes === undefined ? undefined : Buffer.from(body.file_bytes, 'base64'),
          confidence: body.confidence,
          tags: body.tags,
          nowTs: nowSeconds(),
        },
        v32Scorer,
      );
      if (outcome.moved) await context.events.publish({ type: 'feed_changed', org_id: null, kind: 'file', ts: outcome.ts });
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
      const digest = request.params.digest.toUpperCase();
      const decision = request.body.decision as -1 | 0 | 1;
      await store.files.setDecision(principal.org.id, digest, decision, reanchoredScore);
      await context.events.publish({ type: 'feed_changed', org_id: principal.org.id, kind: 'file', ts: Math.floor(Date.now() / 1000) });
      await context.events.publish({ type: 'decision_changed', org_id: principal.org.id, kind: 'file', indicator: digest, decision, ttl: null });
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
      const rows = await store.files.feedPage(principal.org.id, q.ts, q.page_size, delaySeconds(principal.org), {
        // Scores are whole numbers: score >= 0.5 is score >= 1.
        minScore: Math.ceil(q.min_score),
        fileType: q.file_type === undefined ? undefined : knownFileType(q.file_type, 'querystring.file_type'),
        fileName: q.file_name,
        tags: q.tags,
      });
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
    async (request) => {
      const principal = principalOf(request);
      const digest = request.params.digest;
      const deep = request.query.deep_scan === 'YES';
      // The archive is read in the same statement as the main store; a deep scan is charged
      // (and its archived row used) only when the main store has no such file.
      const found = await store.fileLookups.lookup(principal.org.id, digest, deep);
      // A record the organization's delay still hides is not held, for it.
      const visible = visibleTo(principal.org, nowSeconds());
      let row = found.main && visible(found.main) ? found.main : undefined;
      if (!row && deep) {
        await chargeExtra(context, request, context.config.coinPrices.deep_scan);
        row = found.archived && visible(found.archived) ? found.archived : undefined;
      }
      if (!row) throw notFound(`digest ${digest.toUpperCase()}`);
      const record = fileRecord(row);
      if (request.query.explain === 'yes') {
        const aggregates = row.archived ? [] : await store.files.aggregates(row.id);
        record.explain = row.archived ? { archived: true, s0: row.score, anchor_ts: row.ts } : explanation(aggregates, row, nowSeconds());
      }
      return record;
    },
  );
};
