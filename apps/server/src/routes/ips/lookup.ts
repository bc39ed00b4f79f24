import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { IpLookupQuery, IpParams, Ipv4Page } from '@rampart/contracts';
import { EVAL_JS, EXEC_PYTHON, liveScore, scoreV32, V32_VERSION } from '@rampart/scoring';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { delaySeconds, userObject, visibleTo } from '../../services/envelope.ts';
import { loadIpv4Policy, recordDecision } from '../../services/ipv4-policy.ts';
import { Ipv4Lookup } from '../../store/ipv4-lookup.ts';
import { plainJson } from '../../plugins/plain-json.ts';
import { ipv4Record } from './feed.ts';

/**
 * `GET /ips/{ipv4}`: a page envelope whose body holds the records for that address — the address
 * itself and any held network containing it, most specific first; empty when nothing is held
 * (spec 4.2: "the record for that IP if it is held").
 */
export const ipsLookupRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  // Concurrent look-ups of this replica leave as one statement (each as fresh as its own query).
  const lookup = new Ipv4Lookup(context.store.db);
  app.get(
    '/ips/:ipv4',
    {
      config: { rampart: { coin: 'lookup' } },
      schema: {
        tags: ['ipv4'],
        summary: 'Look up one IPv4 address: its record and the held networks containing it (explain=yes adds the score components)',
        params: IpParams,
        querystring: IpLookupQuery,
        response: { 200: Ipv4Page },
      },
      serializerCompiler: plainJson,
    },
    async (request) => {
      const principal = principalOf(request);
      const { full, explain } = request.query;
      const delay = delaySeconds(principal.org);
      const [held, policy] = await Promise.all([
        lookup.holding(principal.org.id, request.params.ipv4),
        loadIpv4Policy(context.store, principal.org.id),
      ]);
      const now = Math.floor(Date.now() / 1000);
      // Records the organization's delay still hides are not held, for it.
      const rows = held.filter(visibleTo(principal.org, now));
      const body = await Promise.all(
        rows.map(async (row) => {
          const decided = recordDecision(row, policy, now);
          const record = ipv4Record(row, delay, full === 'yes', now, decided);
          if (explain !== 'yes') return record;
          const reporters = await context.store.ipv4.reporters(row.id);
          const { s0, components } = scoreV32(reporters.map((r) => ({ orgTrust: r.trust, confidence: r.confidence, events: r.events })));
          return {
            ...record,
            explain: {
              algorithm: V32_VERSION,
              ...components,
              // s0 from the reporters as they stand now (trust may have changed since the last report).
              s0,
              live_score: liveScore(row.score, now - row.ts),
              seconds_since_ts: Math.max(0, now - row.ts),
              decision_reason: decided.reason,
            },
          };
        }),
      );
      return {
        header: {
          type: 'IPv4' as const,
          version: 2 as const,
          ts: String(now),
          page_size: body.length,
          delay,
          eval: EVAL_JS,
          exec_python: EXEC_PYTHON,
          user: userObject(principal),
        },
        body,
      };
    },
  );
};
