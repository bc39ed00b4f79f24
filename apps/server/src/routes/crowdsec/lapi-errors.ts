import type { FastifyInstance } from 'fastify';

/**
 * CrowdSec's clients print an error answer's `message` (LAPI's ErrorResponse); Rampart answers
 * problem+json, whose text is `detail`. This hook adds `message` (the same text) to every
 * problem of the routes of the plugin that calls it, so an agent's log says why it was refused.
 */
export function lapiErrors(app: FastifyInstance): void {
  app.addHook('onSend', async (_request, reply, payload) => {
    if (typeof payload !== 'string' || !String(reply.getHeader('content-type') ?? '').startsWith('application/problem+json')) return payload;
    try {
      const problem = JSON.parse(payload) as { detail?: unknown };
      if (typeof problem.detail !== 'string') return payload;
      return JSON.stringify({ ...problem, message: problem.detail });
    } catch {
      return payload;
    }
  });
}
