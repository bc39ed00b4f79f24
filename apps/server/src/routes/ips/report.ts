import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { IpDecisionBody, IpDecisionParams, IpsReportBody, IpsReportQuery, ROLE } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { EMPTY, NO_BODY } from '../empty-reply.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Whether the raw report body named `decision` (an explicit -1 clears a decision; absent keeps it). */
    decisionGiven?: boolean;
  }
}

/** No body at all (the null schema documents it; undefined is never serialized). */

/** `POST /ips`: a report of an address or network, optionally with the caller's decision (services/ipv4-reports.ts). */
export const ipsReportRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.post(
    '/ips',
    {
      config: { rampart: { minRole: ROLE.contributor, coin: 'report' } },
      schema: {
        tags: ['ipv4'],
        summary: 'Report a suspicious IPv4 address or network (200 merged into a held indicator, 201 new indicator)',
        querystring: IpsReportQuery,
        body: IpsReportBody,
        response: { 200: EMPTY, 201: EMPTY },
      },
      preValidation: async (request) => {
        const raw = request.body;
        request.decisionGiven = typeof raw === 'object' && raw !== null && 'decision' in raw;
      },
    },
    async (request, reply) => {
      const { created } = await context.ipv4Reports.report(principalOf(request), request.body, request.decisionGiven === true, request.query.gaid);
      return reply.code(created ? 201 : 200).send(NO_BODY);
    },
  );

  app.put(
    '/ips/:ip',
    {
      config: { rampart: { minRole: ROLE.contributor, coin: 'decision' } },
      schema: {
        tags: ['ipv4'],
        summary: "Set the organization's decision on an address or URL-encoded network, without reporting it",
        params: IpDecisionParams,
        body: IpDecisionBody,
        response: { 200: EMPTY },
      },
    },
    async (request, reply) => {
      await context.ipv4Reports.decide(principalOf(request), request.params.ip, request.body.decision, request.body.ttl);
      return reply.code(200).send(NO_BODY);
    },
  );
};
