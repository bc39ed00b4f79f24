import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { IpsFeedQuery, Ipv4Page, ROLE } from '@rampart/contracts';
import { EVAL_JS, EXEC_PYTHON } from '@rampart/scoring';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { chargeFeedPage } from '../../plugins/coins.ts';
import { delaySeconds, userObject } from '../../services/envelope.ts';
import { ipv4Record } from '../../services/ipv4-records.ts';
import { loadIpv4Policy, recordDecision } from '../../services/ipv4-policy.ts';
import { plainJson } from '../../plugins/plain-json.ts';

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
