import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DomainsScoreParams, DomainsScoreQuery, FilesScoreParams, FilesScoreQuery, ROLE, UrlsScoreParams, UrlsScoreQuery } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { liveCutoffs } from '../services/ipv4-policy.ts';
import { listEntry, sendTextList, type TextListSource } from '../services/text-list.ts';
import type { DigestKind, Organization } from '../store/index.ts';
import { visibleUpTo } from '../services/envelope.ts';
import type { ScoreListFilter } from '../store/indicator-sql.ts';
import { nowSeconds } from './indicator-common.ts';

const text = z.string().describe('text/plain');

// `GET /files/score/{m}`, `/domains/score/{m}`, `/urls/score/{m}`: what the caller's organization
// should block now, as text. The precedence is the IPv4 lists' (isBlocked): a whitelist is never
// listed, a blacklist always is, otherwise the live score (v3.2, this second) must reach min_score.
// 10,000 lines per page, the next page's cursor in `next_page`, ETag/304 when nothing changed.

function filterFor(org: Organization, minScore: number, now: number): ScoreListFilter {
  return { orgId: org.id, cutoffs: liveCutoffs(minScore, now), visibleUpTo: visibleUpTo(org, now) };
}

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
      const principal = principalOf(request);
      const { min_score } = request.params;
      const { digest, format, page } = request.query;
      const kind = digest.toLowerCase() as DigestKind;
      const filter = filterFor(principal.org, min_score, nowSeconds());
      const source: TextListSource<{ id: number; hex: string }, number> = {
        rows: (after, upTo, limit) => store.files.listRows(filter, kind, after, upTo, limit),
        boundary: (after, n) => store.files.listBoundary(filter, kind, after, n),
        version: (after, upTo) => store.files.listVersion(filter, kind, after, upTo),
        key: (row) => row.id,
      };
      return sendTextList(request, reply, {
        source,
        cursors: context.cursors,
        filters: { list: 'files', min_score, digest },
        page,
        paginate: true,
        format: format === 'LIST' ? 'comma' : 'lines',
        line: (row) => row.hex,
        etagSalt: await store.files.decisionsVersion(principal.org.id),
      });
    },
  );

  for (const kind of ['domain', 'url'] as const) {
    const named = kind === 'domain' ? store.domains : store.urls;
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
        const principal = principalOf(request);
        const { min_score } = request.params as { min_score: number };
        const query = request.query as { format: 'CSV' | 'LIST'; page?: string; protocol?: 'HTTP' | 'HTTPS' };
        const filter = filterFor(principal.org, min_score, nowSeconds());
        // A domain list names the protocol the consumer (a proxy) matches on.
        const prefix = query.protocol ? `${query.protocol.toLowerCase()}://` : '';
        const source: TextListSource<{ id: number; value: string }, number> = {
          rows: (after, upTo, limit) => named.listRows(filter, after, upTo, limit),
          boundary: (after, n) => named.listBoundary(filter, after, n),
          version: (after, upTo) => named.listVersion(filter, after, upTo),
          key: (row) => row.id,
        };
        return sendTextList(request, reply, {
          source,
          cursors: context.cursors,
          filters: { list: kind, min_score, ...(query.protocol ? { protocol: query.protocol } : {}) },
          page: query.page,
          paginate: true,
          format: query.format === 'LIST' ? 'comma' : 'lines',
          // A URL may hold commas (normalization encodes quotes and drops CR/LF, but stored
          // values are not trusted to): it stays one CSV field, one LIST entry, one line.
          line: kind === 'url' ? (row) => listEntry(row.value, query.format === 'LIST' ? 'comma' : 'csv') : (row) => `${prefix}${row.value}`,
          etagSalt: await named.decisionsVersion(principal.org.id),
        });
      },
    );
  }
};
