import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { CrowdsecDecisions, CrowdsecDecisionsQuery, CrowdsecStream, CrowdsecStreamQuery, CrowdsecUsageMetrics } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { EMPTY, NO_BODY } from '../empty-reply.ts';

const bouncer = { rampart: { auth: 'crowdsec_bouncer' as const } };
const tags = ['crowdsec'];
const security = [{ crowdsecApiKey: [] }];

/**
 * The bouncer side of CrowdSec's Local API under `/crowdsec/`, so that a bouncer's `api_url` is
 * `http(s)://<host>:<port>/api/v1/crowdsec/` (issue 32 item 1; services/crowdsec/bouncers.ts).
 * Every call takes an agent key in `X-Api-Key` and is that agent's check-in (via `bouncer`).
 */
export const crowdsecRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/crowdsec/v1/decisions/stream',
    {
      config: bouncer,
      schema: {
        tags,
        security,
        summary: "The agent's list as CrowdSec decisions: everything on startup=true, then the changes since this key's previous call",
        querystring: CrowdsecStreamQuery,
        response: { 200: CrowdsecStream },
      },
    },
    async (request) => context.crowdsecBouncers.stream(principalOf(request), request.query),
  );

  app.get(
    '/crowdsec/v1/decisions',
    {
      config: bouncer,
      schema: {
        tags,
        security,
        summary: "The agent's current decisions that match the filters (null when none does); HEAD checks the key",
        querystring: CrowdsecDecisionsQuery,
        response: { 200: CrowdsecDecisions },
      },
    },
    async (request, reply) => reply.send(await context.crowdsecBouncers.decisions(principalOf(request), request.query)),
  );

  app.post(
    '/crowdsec/v1/usage-metrics',
    {
      config: bouncer,
      schema: {
        tags,
        security,
        summary: "A bouncer's usage metrics: kept as this key's last report",
        body: CrowdsecUsageMetrics,
        response: { 201: EMPTY },
      },
    },
    async (request, reply) => {
      await context.crowdsecBouncers.usageMetrics(principalOf(request), request.body);
      return reply.status(201).send(NO_BODY);
    },
  );
};
