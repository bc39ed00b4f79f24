import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AgentParams, AgentTokenInfo, AgentTokenIssued, AgentTokenParams, AgentTokenRequest, ApiError, ROLE } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { issueAgentToken } from '../../services/agents/tokens.ts';
import { EMPTY, NO_BODY } from '../empty-reply.ts';
import { audit, auditActor } from '../../services/operators/audit.ts';


async function agentOf(store: AppContext['store'], orgId: number, gaid: string) {
  const agent = await store.agents.get(orgId, gaid);
  if (!agent) throw new ApiError('not_found', `no agent ${gaid} in this organization`);
  return agent;
}

/** Agent keys: issue (shown once), list, revoke; and agent deactivation, which revokes them all. */
export const agentKeyRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const { store, events } = context;

  app.post(
    '/agents/:agid/token',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: {
        tags: ['agents'],
        summary: 'Issue a key (signed JWT) for an agent; shown once',
        params: AgentParams,
        body: AgentTokenRequest,
        response: { 201: AgentTokenIssued },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const issued = await issueAgentToken(store, app.agentTokens, {
        org: principal.org,
        issuer: principal.user,
        gaid: request.params.agid,
        ttlDays: request.body?.ttl_days,
      });
      request.log.info({ gaid: issued.gaid, tokenId: issued.token_id }, 'agent key issued');
      await audit(store, auditActor(principal, request.ip), { orgId: principal.org.id, action: 'agent_key.issue', target: issued.gaid, detail: { token_id: issued.token_id, expires_at: issued.expires_at } });
      return reply.status(201).send(issued);
    },
  );

  app.get(
    '/agents/:agid/tokens',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: { tags: ['agents'], summary: "An agent's keys (ids only)", params: AgentParams, response: { 200: z.array(AgentTokenInfo) } },
    },
    async (request) => {
      const agent = await agentOf(store, principalOf(request).org.id, request.params.agid);
      return (await store.agents.tokens(agent.id)).map((t) => ({
        token_id: t.jti,
        issued_at: t.issued_at,
        issued_by: t.issued_by,
        expires_at: t.expires_at,
        revoked: t.revoked_at !== null,
      }));
    },
  );

  app.delete(
    '/agents/:agid/tokens/:token_id',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: { tags: ['agents'], summary: 'Revoke one agent key; its live connections are closed', params: AgentTokenParams, response: { 200: EMPTY } },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const agent = await agentOf(store, principal.org.id, request.params.agid);
      if (!(await store.agents.revokeToken(agent.id, request.params.token_id))) {
        throw new ApiError('not_found', `no active key ${request.params.token_id} for agent ${agent.gaid}`);
      }
      await audit(store, auditActor(principal, request.ip), { orgId: principal.org.id, action: 'agent_key.revoke', target: agent.gaid, detail: { token_id: request.params.token_id } });
      await events.publish({ type: 'agent_revoked', org_id: principal.org.id, gaid: agent.gaid, token_id: request.params.token_id });
      // An empty 200 (no body), as the specification's "no body" responses.
      return reply.status(200).send(NO_BODY);
    },
  );

  app.delete(
    '/agents/:agid',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: { tags: ['agents'], summary: 'Deactivate an agent: every key it holds stops working (record kept)', params: AgentParams, response: { 200: EMPTY } },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      if (!(await store.agents.deactivate(principal.org.id, request.params.agid))) {
        throw new ApiError('not_found', `no agent ${request.params.agid} in this organization`);
      }
      await audit(store, auditActor(principal, request.ip), { orgId: principal.org.id, action: 'agent.deactivate', target: request.params.agid, detail: {} });
      await events.publish({ type: 'agent_revoked', org_id: principal.org.id, gaid: request.params.agid });
      // An empty 200 (no body), as the specification's "no body" responses.
      return reply.status(200).send(NO_BODY);
    },
  );
};
