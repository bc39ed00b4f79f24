import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import * as C from '@rampart/contracts';
import { ApiError, ROLE } from '@rampart/contracts';
import type { RouteOptions } from '../plugins/route-config.ts';

/**
 * Spec section 4 routes whose behaviour is not built yet. Each is registered with its full
 * contract (so validation, auth, roles and the OpenAPI document are real) and answers 501
 * problem+json. An issue that builds one moves it out of this table into its resource folder.
 */
interface PendingRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  tag: string;
  summary: string;
  rampart: RouteOptions;
  params?: z.ZodType;
  querystring?: z.ZodType;
  body?: z.ZodType;
  response?: z.ZodType;
}

const empty = z.null().describe('empty body');

export const PENDING_ROUTES: PendingRoute[] = [
];

export const pendingRoutes: FastifyPluginAsyncZod<{ routes: PendingRoute[] }> = async (app, { routes }) => {
  for (const r of routes) {
    const schema: Record<string, unknown> = { tags: [r.tag], summary: `${r.summary} (not yet built: 501)` };
    if (r.params) schema.params = r.params;
    if (r.querystring) schema.querystring = r.querystring;
    if (r.body) schema.body = r.body;
    if (r.response) schema.response = { [r.method === 'POST' && r.url === '/agents' ? 201 : 200]: r.response };
    app.route({
      method: r.method,
      url: r.url,
      config: { rampart: r.rampart },
      schema,
      handler: async () => {
        throw new ApiError('not_implemented', `${r.method} ${r.url.replaceAll(/:(\w+)/g, '{$1}')} is not built yet`);
      },
    });
  }
};
