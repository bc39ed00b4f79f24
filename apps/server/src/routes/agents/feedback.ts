import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AgentFeedbackBody, ApiError, ROLE } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { recordFeedback } from '../../services/agents/feedback.ts';
import { EMPTY, NO_BODY } from '../empty-reply.ts';

/**
 * `POST /agents/feedback`: what the original agent posts after each enforcement run
 * (decisions.md, Compatibility). Counts as the agent's check-in and records, per plugin, what
 * it says it enforces, under a fixed name or a key of that agent's configuration. An agent key
 * reports only for itself.
 */
export const agentFeedbackRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.post(
    '/agents/feedback',
    {
      config: { rampart: { minRole: ROLE.contributor } },
      schema: {
        tags: ['agents'],
        summary: 'Agent feedback after an enforcement run (check-in)',
        body: AgentFeedbackBody,
        response: { 200: EMPTY },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const body = request.body;
      if (principal.agent && principal.agent.gaid !== body.agid) throw new ApiError('forbidden', 'an agent key reports only for its own agent');
      await recordFeedback(context, principal.org, body, Math.floor(Date.now() / 1000));
      // An EMPTY 200 (no body), as the specification's "no body" responses.
      return reply.status(200).send(NO_BODY);
    },
  );
};
