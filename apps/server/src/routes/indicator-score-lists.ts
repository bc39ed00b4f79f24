import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DomainsScoreParams, DomainsScoreQuery, FilesScoreParams, FilesScoreQuery, ROLE, UrlsScoreParams, UrlsScoreQuery } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { fileScoreList, namedScoreList } from '../services/named/indicator-score-lists.ts';
import { sendTextList } from './text-list-reply.ts';
import { nowSeconds } from './indicator-common.ts';

const text = z.string().describe('text/plain');

// `GET /files/score/{m}`, `/domains/score/{m}`, `/urls/score/{m}`: what the caller's organization
// should block now, as text (services/named/indicator-score-lists.ts). 10,000 lines per page, the next
// page's cursor in `next_page`, ETag/304 when nothing changed.
export const indicatorScoreListRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const { store } = context;
  const config = { rampart: { minRole: ROLE.reader, coin: 'list' as const } };

  app.get(
    '/files/score/:min_score',
    {
      config,
      schema: { tags: ['files'], summary: 'Digests (of the chosen kind) to block now: live score >= min_score after decisions; 10,000 per page', params: FilesScoreParams, querystring: FilesScoreQuery, response: { 200: text } },
    },
    async (request, reply) => {
      const { min_score } = request.params;
      const { digest, format, page } = request.query;
      const list = await fileScoreList(store, principalOf(request).org, min_score, digest, nowSeconds());
      const filters = { list: 'files', min_score, digest };
      return sendTextList(request, reply, { ...list, cursors: context.cursors, filters, page, paginate: true, format: format === 'LIST' ? 'comma' : 'lines' });
    },
  );

  for (const kind of ['domain', 'url'] as const) {
    app.get(
      `/${kind}s/score/:min_score`,
      {
        config,
        schema:
          kind === 'domain'
            ? { tags: ['domains'], summary: 'Domains to block now, written as protocol://domain: live score >= min_score after decisions; 10,000 per page', params: DomainsScoreParams, querystring: DomainsScoreQuery, response: { 200: text } }
            : { tags: ['urls'], summary: 'URLs to block now: live score >= min_score after decisions; 10,000 per page', params: UrlsScoreParams, querystring: UrlsScoreQuery, response: { 200: text } },
      },
      async (request, reply) => {
        const { min_score } = request.params as { min_score: number };
        const query = request.query as { format: 'CSV' | 'LIST'; page?: string; protocol?: 'HTTP' | 'HTTPS' };
        const list = await namedScoreList(store, kind, principalOf(request).org, min_score, query, nowSeconds());
        const filters = { list: kind, min_score, ...(query.protocol ? { protocol: query.protocol } : {}) };
        return sendTextList(request, reply, { ...list, cursors: context.cursors, filters, page: query.page, paginate: true, format: query.format === 'LIST' ? 'comma' : 'lines' });
      },
    );
  }
};
