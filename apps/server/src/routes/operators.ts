import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  ApiKeyInfo,
  AuditEntry,
  AuditExportQuery,
  AuditListResponse,
  AuditQuery,
  OperatorActivityQuery,
  OperatorActivityResponse,
  OperatorAgentListQuery,
  OperatorAgentListResponse,
  OperatorCoinsBody,
  OperatorOrganization,
  OperatorOrgCreateBody,
  OperatorOrgListQuery,
  OperatorOrgListResponse,
  OperatorOrgPatchBody,
  OperatorUser,
  OrgGidParams,
  ROLE,
} from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { allianceActivity, listAllianceAgents } from '../services/operators/alliance.ts';
import { auditActor, auditCsv, exportAudit, listAudit } from '../services/operators/audit.ts';
import { createOrganization, grantCoins, listOrganizations, organizationOf, updateOrganization } from '../services/operators/operators.ts';

/** Most users or keys listed for one organization. */
const MAX_LISTED = 1000;
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/**
 * Alliance operators (role 9): organizations, coins, trust and delay, and an organization's users
 * and keys; every change audited. `GET /audit`: the audit log (admins: their organization).
 */
export const operatorRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const { store } = context;
  const deps = { store, cursors: context.cursors };
  const operator = { rampart: { minRole: ROLE.operator } };
  const tags = ['operators'];

  app.get('/operator/organizations', { config: operator, schema: { tags, summary: 'Organizations of the alliance', querystring: OperatorOrgListQuery, response: { 200: OperatorOrgListResponse } } }, async (request) =>
    listOrganizations(deps, request.query),
  );

  app.post(
    '/operator/organizations',
    { config: operator, schema: { tags, summary: 'Create an organization (audited)', body: OperatorOrgCreateBody, response: { 201: OperatorOrganization } } },
    async (request, reply) => reply.status(201).send(await createOrganization(store, auditActor(principalOf(request), request.ip), request.body)),
  );

  app.patch(
    '/operator/organizations/:gid',
    { config: operator, schema: { tags, summary: "Set an organization's trust and/or delay (audited)", params: OrgGidParams, body: OperatorOrgPatchBody, response: { 200: OperatorOrganization } } },
    async (request) => updateOrganization(store, auditActor(principalOf(request), request.ip), request.params.gid, request.body),
  );

  app.post(
    '/operator/organizations/:gid/coins',
    { config: operator, schema: { tags, summary: 'Grant coins to an organization (audited)', params: OrgGidParams, body: OperatorCoinsBody, response: { 200: OperatorOrganization } } },
    async (request) => grantCoins(store, auditActor(principalOf(request), request.ip), request.params.gid, request.body.amount, request.body.note),
  );

  app.get(
    '/operator/organizations/:gid/users',
    { config: operator, schema: { tags, summary: `Users of an organization (at most ${MAX_LISTED})`, params: OrgGidParams, response: { 200: z.array(OperatorUser) } } },
    async (request) => store.operators.users((await organizationOf(store, request.params.gid)).id, MAX_LISTED),
  );

  app.get(
    '/operator/organizations/:gid/keys',
    { config: operator, schema: { tags, summary: 'API keys of an organization (never secrets)', params: OrgGidParams, response: { 200: z.array(ApiKeyInfo) } } },
    async (request) => {
      const rows = await store.keys.listForOrg((await organizationOf(store, request.params.gid)).id);
      return rows.slice(0, MAX_LISTED).map((k) => ({ key_id: k.key_id, username: k.username, label: k.label, created_at: iso(k.created_at)!, last_used_at: iso(k.last_used_at), revoked_at: iso(k.revoked_at) }));
    },
  );

  app.get(
    '/operator/agents',
    { config: operator, schema: { tags, summary: "Every organization's agents with their state, last check-in, drift and versions (alliance view)", querystring: OperatorAgentListQuery, response: { 200: OperatorAgentListResponse } } },
    async (request) => listAllianceAgents(deps, request.query),
  );

  app.get(
    '/operator/activity',
    { config: operator, schema: { tags, summary: 'Reports and new indicators per organization and day, top sources, ASNs and countries of new indicators (1, 7 or 30 days)', querystring: OperatorActivityQuery, response: { 200: OperatorActivityResponse } } },
    async (request) => allianceActivity(store, context.rollups, request.query.days),
  );

  app.get(
    '/audit',
    { config: { rampart: { minRole: ROLE.admin } }, schema: { tags, summary: 'Audit log: who did what, when, from where (admins: their organization; operators: all)', querystring: AuditQuery, response: { 200: AuditListResponse } } },
    async (request) => listAudit(deps, principalOf(request), request.query),
  );

  app.get(
    '/audit/export',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: {
        tags,
        summary: 'Every audit entry matching the filters, newest first, as CSV or a JSON array (admins: their organization; operators: all)',
        querystring: AuditExportQuery,
        response: { 200: z.union([z.array(AuditEntry), z.string().describe('text/csv')]) },
      },
    },
    async (request, reply) => {
      const rows = await exportAudit(store, principalOf(request), request.query);
      const name = `rampart-audit.${request.query.format}`;
      reply.header('content-disposition', `attachment; filename="${name}"`);
      if (request.query.format === 'csv') return reply.type('text/csv; charset=utf-8').send(auditCsv(rows));
      return rows;
    },
  );
};
