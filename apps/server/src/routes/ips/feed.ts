import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { IpsFeedQuery, Ipv4Page, ROLE, type Ipv4Record } from '@rampart/contracts';
import { EVAL_JS, EXEC_PYTHON, liveScore } from '@rampart/scoring';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { chargeFeedPage } from '../../plugins/coins.ts';
import { delaySeconds, isoMillis, userObject } from '../../services/envelope.ts';
import { loadIpv4Policy, recordDecision, type RecordDecision } from '../../services/ipv4-policy.ts';
import { plainJson } from '../../plugins/plain-json.ts';
import type { Ipv4Row } from '../../store/index.ts';

/** The record's `ip_info`: exactly the spec's fields, whatever else the stored document holds. */
function ipInfoOf(stored: Record<string, unknown> | null): NonNullable<Ipv4Record['ip_info']> {
  const text = (key: string) => {
    const value = stored?.[key];
    return typeof value === 'string' ? value : '';
  };
  return {
    as_domain: text('as_domain'),
    as_name: text('as_name'),
    asn: text('asn'),
    continent: text('continent'),
    continent_name: text('continent_name'),
    country: text('country'),
    country_name: text('country_name'),
  };
}

/** A record as the caller sees it: `decision`/`ttl` come from the caller's precedence (ipv4-policy). */
export function ipv4Record(row: Ipv4Row, delay: number, full: boolean, nowSeconds: number, decided: RecordDecision): Ipv4Record {
  const ip = row.network.endsWith('/32') ? row.network.slice(0, -3) : row.network;
  const record: Ipv4Record = {
    gid: row.gid,
    ip,
    ts: row.ts,
    entry_ts: row.entry_ts,
    is_network: row.is_network,
    score: row.score,
    delay,
    dec: liveScore(row.score, nowSeconds - row.ts),
    decision: decided.decision,
    ttl: decided.ttl,
  };
  if (!full) return record;
  return {
    ...record,
    ip_info: ipInfoOf(row.ip_info),
    info: { members: row.members, events: row.events, sources: row.sources, stix_bundles: [], attack_infos: [], notes: row.notes },
    elk_ts: isoMillis(row.ts),
    elk_entry_ts: isoMillis(row.entry_ts),
  };
}

/** `GET /ips`: the IPv4 feed as the original clients page it (decisions.md, Compatibility). */
export const ipsFeedRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/ips',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'feed' } },
      schema: {
        tags: ['ipv4'],
        summary: 'IPv4 feed page: records with ts strictly greater than ts, ordered by (ts, id)',
        querystring: IpsFeedQuery,
        response: { 200: Ipv4Page },
      },
      serializerCompiler: plainJson,
    },
    async (request) => {
      const principal = principalOf(request);
      const { ts, page_size, full, gaid } = request.query;
      // The agent's poll is its check-in (decisions.md); an agent key checks in as itself, and an
      // unknown or foreign gaid is ignored.
      const checkinGaid = principal.agent?.gaid ?? gaid;
      if (checkinGaid) await context.store.agents.checkIn(principal.org.id, checkinGaid, 'feed');
      const delay = delaySeconds(principal.org);
      const [rows, policy] = await Promise.all([context.store.ipv4.feedPage(principal.org.id, ts, page_size, delay), loadIpv4Policy(context.store, principal.org.id)]);
      const now = Math.floor(Date.now() / 1000);
      // The "nothing new" poll costs nothing.
      chargeFeedPage(request, rows.length);
      return {
        header: {
          type: 'IPv4' as const,
          version: 2 as const,
          ts: String(ts),
          next_ts: rows.at(-1)?.ts ?? ts,
          page_size,
          delay,
          eval: EVAL_JS,
          exec_python: EXEC_PYTHON,
          user: userObject(principal),
        },
        body: rows.map((row) => ipv4Record(row, delay, full === 'yes', now, recordDecision(row, policy, now))),
      };
    },
  );
};
