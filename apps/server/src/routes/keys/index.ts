import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ApiError, ApiKeyCreateBody, ApiKeyCreated, ApiKeyInfo, KeyIdParams, ROLE } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { createApiKey } from '../../services/operators/admin.ts';
import { auditActor } from '../../services/operators/audit.ts';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/**
 * API keys of the caller's organization (organization admins). A key is shown once, when it is
 * issued; lists never carry secrets. Revocation reaches every replica within AUTH_CACHE_SECONDS.
 */
export const keyRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const { store } = context;
  const admin = { rampart: { minRole: ROLE.admin } };

  app.get('/keys', { config: admin, schema: { tags: ['keys'], summary: "The organization's API keys", response: { 200: z.array(ApiKeyInfo) } } }, async (request) => {
    const rows = await store.keys.listForOrg(principalOf(request).org.id);
    return rows.map((k) => ({
      key_id: k.key_id,
      username: k.username,
      label: k.label,
      created_at: iso(k.created_at)!,
      last_used_at: iso(k.last_used_at),
      revoked_at: iso(k.revoked_at),
    }));
  });

  app.post(
    '/keys',
    { config: admin, schema: { tags: ['keys'], summary: 'Issue an API key (shown once)', body: ApiKeyCreateBody, response: { 201: ApiKeyCreated } } },
    async (request, reply) => {
      const caller = principalOf(request);
      const username = request.body.username ?? caller.user.username;
      const user = await store.users.byUsername(username);
      // Other organizations' users are answered exactly like unknown ones.
      if (!user || user.org_id !== caller.org.id) throw new ApiError('not_found', `no user ${username} in your organization`, { errors: [{ path: 'body.username', message: 'unknown user' }] });
      if (user.role > caller.user.role) throw new ApiError('forbidden', 'a key for a user with a higher role than yours cannot be issued');
      const created = await createApiKey(store, { username, label: request.body.label });
      await store.operators.record(auditActor(caller, request.ip), { orgId: caller.org.id, action: 'key.create', target: created.keyId, detail: { username, label: request.body.label } });
      return reply.status(201).send({ key_id: created.keyId, key: created.key, username, label: request.body.label });
    },
  );

  app.delete(
    '/keys/:key_id',
    { config: admin, schema: { tags: ['keys'], summary: 'Revoke an API key', params: KeyIdParams, response: { 200: z.object({ key_id: z.string(), revoked: z.literal(true) }) } } },
    async (request) => {
      const caller = principalOf(request);
      const outcome = await store.keys.revokeInOrg(request.params.key_id, caller.org.id, caller.user.role);
      if (outcome === 'unknown') throw new ApiError('not_found', `no key ${request.params.key_id} in your organization`);
      if (outcome === 'higher_role') throw new ApiError('forbidden', "the key belongs to a user with a higher role than yours; only that role can revoke it");
      await store.operators.record(auditActor(caller, request.ip), { orgId: caller.org.id, action: 'key.revoke', target: request.params.key_id, detail: {} });
      return { key_id: request.params.key_id, revoked: true as const };
    },
  );
};
