import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { IpDecisionBody, IpDecisionParams, IpsReportBody, IpsReportQuery, ROLE } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { EMPTY, NO_BODY } from '../empty-reply.ts';
import { audit, auditActor } from '../../services/operators/audit.ts';
import { applyDecision } from '../../services/decisions.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Whether the raw report body named `decision` (an explicit -1 clears a decision; absent keeps it). */
    decisionGiven?: boolean;
  }
}

/** No body at all (the null schema documents it; undefined is never serialized). */

/** `POST /ips`: a report of an address or network, optionally with the caller's decision (services/ipv4/reports.ts). */
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
      const principal = principalOf(request);
      const { created, network } = await context.ipv4Reports.report(principal, request.body, request.decisionGiven === true, request.query.gaid);
      if (request.decisionGiven === true) {
        const value = network.endsWith('/32') ? network.slice(0, -3) : network;
        const { decision, ttl } = request.body;
        await audit(context.store, auditActor(principal, request.ip), {
          orgId: principal.org.id,
          action: decision === -1 ? 'decision.clear' : 'decision.set',
          target: `ipv4:${value}`,
          detail: { kind: 'ipv4', value, decision, ttl: ttl ?? null, reason: null, reported: true },
        });
      }
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
      const principal = principalOf(request);
      const { decision, ttl, reason } = request.body;
      await applyDecision(context, principal.org.id, auditActor(principal, request.ip), { kind: 'ipv4', value: request.params.ip, decision: decision as -1 | 0 | 1, ttl, reason });
      return reply.code(200).send(NO_BODY);
    },
  );
};
