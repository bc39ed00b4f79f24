import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FlatParams, FlatQuery, Ipv4ListParams, Ipv4ListQuery } from '@rampart/contracts';
import { liveScore } from '@rampart/scoring';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { ipv4ListFilter, loadIpv4Policy } from '../../services/ipv4-policy.ts';
import { sendTextList, type TextListSource } from '../../services/text-list.ts';
import type { Ipv4ListFilter, Ipv4ListRow } from '../../store/ipv4.ts';
import type { Store } from '../../store/index.ts';

const text = z.string().describe('text/plain');
/** Rows per store query: a fifth of a page, about 200 kB of rows and text in memory at a time. */
const LIST_CHUNK = 20_000;

/** Spec 4.2, in this order. */
export const FLAT_CSV_HEADER = 'IPv4,LiveScore,Members,Reports,LastUpdate,AS,ASN,CDN,Reverse,IS_CDN';

function listSource(store: Store, filter: Ipv4ListFilter, columns: 'all' | 'address' = 'address'): TextListSource<Ipv4ListRow, number> {
  // The boundary scan already yields the page's version: keep it instead of scanning again.
  let known: { after: number | null; upTo: number | null; version: string } | null = null;
  return {
    rows: (after, upTo, limit) => store.ipv4.listRows(filter, after, upTo, limit, columns),
    async boundary(after, n) {
      const b = await store.ipv4.listBoundary(filter, after, n);
      known = { after, upTo: b.last, version: b.version };
      return { last: b.last, more: b.more };
    },
    version: (after, upTo) =>
      known && known.after === after && known.upTo === upTo ? Promise.resolve(known.version) : store.ipv4.listVersion(filter, after, upTo),
    key: (row) => row.id,
  };
}

/** A /32 is written as the bare address, a network in CIDR notation. */
export function displayIp(network: string): string {
  return network.endsWith('/32') ? network.slice(0, -3) : network;
}

/** RFC 4180: quote a field holding a comma, quote or line break. */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

async function prepare(context: AppContext, orgId: number, threshold: number) {
  const now = Math.floor(Date.now() / 1000);
  const policy = await loadIpv4Policy(context.store, orgId);
  const decisions = await context.store.ipv4.decisionsVersion(orgId);
  const filter = ipv4ListFilter(policy, threshold, now, decisions.count > 0);
  // The ETag must move when the organization's settings or decisions do, not only the rows.
  const salt = JSON.stringify([policy.reserved, policy.rule, decisions]);
  return { now, filter, salt };
}

/** `GET /ipv4/{min_score}` and `GET /flat/{min_score}`: the caller's blockable addresses as text. */
export const ipv4ListRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/ipv4/:min_score',
    {
      config: { rampart: { coin: 'list', agent: true } },
      schema: {
        tags: ['ipv4'],
        summary: 'Addresses whose live score (v3.2, now) reaches min_score after decisions; 10,000 per page, next page in the next_page header',
        params: Ipv4ListParams,
        querystring: Ipv4ListQuery,
        response: { 200: text },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { min_score } = request.params;
      const { format, agid, plugin, page } = request.query;
      // An agent key checks in as its own agent, whatever the query names.
      const checkinGaid = principal.agent?.gaid ?? agid;
      if (checkinGaid) await context.store.agents.checkIn(principal.org.id, checkinGaid, 'ipv4', plugin);
      const { filter, salt } = await prepare(context, principal.org.id, min_score);
      return sendTextList(request, reply, {
        source: listSource(context.store, filter),
        cursors: context.cursors,
        filters: { list: 'ipv4', min_score },
        page,
        paginate: true,
        format: format === 'LIST' ? 'comma' : 'lines',
        line: (row) => displayIp(row.network),
        etagSalt: salt,
        chunkRows: LIST_CHUNK,
      });
    },
  );

  app.get(
    '/flat/:min_score',
    {
      config: { rampart: { coin: 'list' } },
      schema: {
        tags: ['ipv4'],
        summary: `Every address whose live score reaches min_score, streamed in one response: CSV (${FLAT_CSV_HEADER}) or list=YES for a comma list`,
        params: FlatParams,
        querystring: FlatQuery,
        response: { 200: text },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { min_score } = request.params;
      const { now, filter, salt } = await prepare(context, principal.org.id, min_score);
      const enrichment = context.enrichment;
      if (request.query.list === 'YES') {
        return sendTextList(request, reply, {
          source: listSource(context.store, filter),
          cursors: context.cursors,
          filters: { list: 'flat', min_score },
          paginate: false,
          format: 'comma',
          line: (row) => displayIp(row.network),
          etagSalt: salt,
          chunkRows: LIST_CHUNK,
        });
      }
      return sendTextList(request, reply, {
        source: listSource(context.store, filter, 'all'),
        cursors: context.cursors,
        filters: { list: 'flat', min_score },
        paginate: false,
        format: 'lines',
        header: FLAT_CSV_HEADER,
        line: (row) => {
          const ip = displayIp(row.network);
          const first = ip.split('/')[0]!;
          const asName = row.ip_info?.as_name || (enrichment.asnOf(first)?.name ?? '');
          const asn = row.ip_info?.asn || (() => {
            const a = enrichment.asnOf(first);
            return a ? `AS${a.asn}` : '';
          })();
          const cdn = enrichment.cdnOf(first) ?? '';
          return [
            ip,
            liveScore(row.score, now - row.ts).toFixed(2),
            String(row.members),
            String(row.events),
            new Date(row.updated * 1000).toISOString(),
            csvField(asName),
            asn,
            csvField(cdn),
            '',
            cdn ? 'true' : 'false',
          ].join(',');
        },
        // LiveScore is computed for the request second: the bytes change with it.
        etagSalt: `${salt}:${now}`,
        chunkRows: LIST_CHUNK,
      });
    },
  );
};
