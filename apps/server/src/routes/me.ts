import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ApiError, MeResponse } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { userObject } from '../services/envelope.ts';

/** `GET /me`: who the credential is, and the organization's current coin balance (free). */
export const meRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get('/me', { schema: { tags: ['tools'], summary: 'The caller, its organization and coin balance', response: { 200: MeResponse } } }, async (request) => {
    const principal = principalOf(request);
    // Fresh from the store: the principal may come from the auth cache, the balance must not.
    const stored = await context.store.orgs.byId(principal.org.id);
    if (!stored) throw new ApiError('unauthorized', 'the organization of this key no longer exists');
    const org = request.server.coinLedger.shown(stored);
    return {
      user: userObject(principal),
      organization: {
        gid: org.gid,
        name: org.name,
        trust: org.trust,
        credit_tokens: org.credit_tokens,
        debit_tokens: org.debit_tokens,
        balance: org.credit_tokens - org.debit_tokens,
      },
      via: principal.kind,
    };
  });
};
