import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ImportBody, ImportResponse, ROLE } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { auditActor } from '../services/operators/audit.ts';
import { runImport } from '../services/imports/imports.ts';

/** `POST /import`: a CSV, STIX 2.1 or MISP file reported (or previewed) row by row (services/imports/imports.ts). */
export const importRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.post(
    '/import',
    {
      config: { rampart: { minRole: ROLE.contributor } },
      schema: {
        tags: ['import'],
        summary: "Import indicators from a CSV, STIX 2.1 bundle or MISP event as the organization's reports (dry_run: preview only)",
        body: ImportBody,
        response: { 200: ImportResponse },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return runImport(context, principal.org.id, auditActor(principal, request.ip), request.body);
    },
  );
};
