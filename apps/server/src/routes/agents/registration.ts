import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AgentConfig, AgentRegisterResponse, AgentSettingsDocument, AgentSummary, ApiError, ROLE } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { agentSummary } from '../../services/agents/summary.ts';
import { audit, auditActor } from '../../services/operators/audit.ts';

/** `POST /agents` (spec 4.7) and `GET /agents`: registration and the organization's agent list. */
export const agentRegistrationRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.post(
    '/agents',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: {
        tags: ['agents'],
        summary: 'Register an agent (201; 409 when the gaid is already registered)',
        body: AgentConfig,
        response: { 201: AgentRegisterResponse },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const document = AgentSettingsDocument.parse({ ...request.body, running: 'yes' });
      if (!(await context.store.agents.register(principal.org.id, document, principal.user.username))) {
        throw new ApiError('conflict', `agent ${document.gaid} is already registered`);
      }
      request.log.info({ gaid: document.gaid, org: principal.org.gid }, 'agent registered');
      await audit(context.store, auditActor(principal, request.ip), {
        orgId: principal.org.id,
        action: 'agent.register',
        target: document.gaid,
        detail: { gaid: document.gaid, score_threshold: document.score_threshold, sync_time: document.sync_time },
      });
      return reply.status(201).send({ success: true, message: 'agent created successfully', agent_id: document.gaid });
    },
  );

  app.get(
    '/agents',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: {
        tags: ['agents'],
        summary: "The organization's agents: state (deactivated, keys_revoked, withdrawn, never_seen, silent, drifting, alive), last check-in, version, what each enforces",
        response: { 200: z.array(AgentSummary) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const now = Math.floor(Date.now() / 1000);
      const [rows, keys] = await Promise.all([context.store.agents.list(principal.org.id), context.store.agents.keyCounts(principal.org.id)]);
      return rows.map((row) => agentSummary(row, keys.get(row.id), now));
    },
  );
};
