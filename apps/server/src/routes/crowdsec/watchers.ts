import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  ApiError,
  CrowdsecAlertIds,
  CrowdsecAlertsBody,
  CrowdsecWatcherLogin,
  CrowdsecWatcherRegistration,
  CrowdsecWatcherToken,
} from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf, type Principal } from '../../plugins/auth.ts';
import { agentPrincipal } from '../../plugins/agent-auth.ts';
import { credentialFrom } from '../../services/operators/api-keys.ts';
import { agentTokenSecret } from '../../services/agents/tokens.ts';
import { CrowdsecAlerts } from '../../services/crowdsec/alerts.ts';
import { rfc3339, watcherTokenCodec, type WatcherTokenCodec } from '../../services/crowdsec/watcher-tokens.ts';
import { repriceTo } from '../indicator-common.ts';
import { lapiErrors } from './lapi-errors.ts';
import { EMPTY, NO_BODY } from '../empty-reply.ts';

/** No body at all (the null schema documents it; undefined is never serialized). */

/** How watchers authenticate: an agent key to log in, then the bearer token the login gave. */
function watcherAuth(context: AppContext, tokens: WatcherTokenCodec) {
  return {
    /** The machine a login or registration names, when its password is one of that agent's keys. */
    machine: async (request: FastifyRequest, reply: FastifyReply, body: { machine_id: string; password: string }): Promise<Principal> => {
      const principal = await request.server.verifyAgentKey(request, reply, body.password);
      if (principal.agent!.gaid !== body.machine_id) {
        throw new ApiError('unauthorized', 'machine_id is not the agent this password (an agent key) belongs to');
      }
      return principal;
    },
    /** onRequest: a request without any credential is refused before its body is read. */
    bearer: async (request: FastifyRequest): Promise<void> => {
      if (!credentialFrom(request.headers.authorization)) throw new ApiError('unauthorized', 'send the token of v1/watchers/login as Authorization: Bearer <token>');
    },
    /**
     * preHandler (after validation, so a malformed body is a 400 naming its field whoever sends
     * it): the bearer token of v1/watchers/login, and the agent key it was given for still valid.
     */
    watcher: async (request: FastifyRequest): Promise<void> => {
      const claims = await tokens.verify(credentialFrom(request.headers.authorization) ?? '');
      if (!claims) throw new ApiError('unauthorized', 'the watcher token is invalid or expired; log in again');
      const principal = await agentPrincipal(context.store, claims);
      if (!principal) throw new ApiError('unauthorized', 'the agent key this token was given for was revoked or its agent deactivated');
      request.principal = principal;
    },
  };
}

/**
 * The watcher side of CrowdSec's Local API, mounted under `/api/v1/crowdsec/` (its agents' `url`):
 * a CrowdSec agent (`crowdsec -no-api`) logs in as a registered Rampart agent (machine_id its
 * gaid, password one of its agent keys), pushes alerts, each a report of the organization, and
 * beats its heart; each of those is the agent's check-in. The bouncer side (v1/decisions) is its
 * own plugin under the same prefix.
 */
export const crowdsecWatcherRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const tokens = watcherTokenCodec(await agentTokenSecret(context.config.agentTokenSecret, context.store));
  const alerts = new CrowdsecAlerts({ store: context.store, reports: context.ipv4Reports });
  const { machine, bearer, watcher } = watcherAuth(context, tokens);
  lapiErrors(app);

  app.post(
    '/v1/watchers',
    {
      config: { rampart: { auth: 'public' } },
      schema: {
        tags: ['crowdsec'],
        summary: 'CrowdSec watcher registration: accepted (201) only for a registered agent with one of its agent keys as password; nothing else is pre-authorized (401)',
        body: CrowdsecWatcherRegistration,
        response: { 201: EMPTY },
      },
    },
    async (request, reply) => {
      await machine(request, reply, request.body);
      return reply.code(201).send(NO_BODY);
    },
  );

  app.post(
    '/v1/watchers/login',
    {
      config: { rampart: { auth: 'public' } },
      schema: {
        tags: ['crowdsec'],
        summary: "CrowdSec watcher login: machine_id an agent's gaid, password one of its agent keys; answers a bearer token for an hour",
        body: CrowdsecWatcherLogin,
        response: { 200: CrowdsecWatcherToken },
      },
    },
    async (request, reply) => {
      const principal = await machine(request, reply, request.body);
      const { token, expiresAt } = await tokens.sign({ jti: principal.agent!.tokenId, gaid: principal.agent!.gaid, org: principal.org.gid }, Math.floor(Date.now() / 1000));
      await alerts.checkIn(principal);
      return { code: 200 as const, expire: rfc3339(expiresAt), token };
    },
  );

  app.post(
    '/v1/alerts',
    {
      // The coins plugin charges before the watcher is known; the handler charges per alert.
      config: { rampart: { auth: 'public', coin: 'report' } },
      onRequest: bearer,
      preHandler: watcher,
      schema: {
        tags: ['crowdsec'],
        summary: "CrowdSec alerts (Bearer token of v1/watchers/login): each a report of the agent's organization, all stored or none (201 with one id per alert)",
        body: CrowdsecAlertsBody,
        response: { 201: CrowdsecAlertIds },
      },
    },
    async (request, reply) => {
      // The report price, once per alert.
      await repriceTo(context, request, context.config.coinPrices.report * request.body.length);
      const ids = await alerts.post(principalOf(request), request.body);
      return reply.code(201).send(ids);
    },
  );

  app.get(
    '/v1/heartbeat',
    {
      config: { rampart: { auth: 'public' } },
      onRequest: bearer,
      preHandler: watcher,
      schema: {
        tags: ['crowdsec'],
        summary: "CrowdSec watcher heartbeat (Bearer token of v1/watchers/login): the agent's check-in",
        response: { 200: EMPTY },
      },
    },
    async (request, reply) => {
      await alerts.checkIn(principalOf(request));
      return reply.code(200).send(NO_BODY);
    },
  );
};
