import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  API_BASE,
  ApiError,
  ERROR_CATALOG,
  TAXII_BASE,
  TAXII_MEDIA_TYPE,
  TaxiiCollectionParams,
  TaxiiObjectParams,
  TaxiiObjectQuery,
  TaxiiObjectsQuery,
  TaxiiVersionsQuery,
  type TaxiiError,
} from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { chargeFeedPage } from '../plugins/coins.ts';
import { errorAnswer } from '../plugins/errors.ts';
import {
  TAXII_API_ROOT,
  TAXII_COLLECTIONS,
  collectionKind,
  collectionPage,
  dateAddedHeaders,
  manifestRecord,
  objectPage,
  versionsPage,
  type EntryPage,
  type TaxiiReader,
} from '../services/stix/taxii.ts';
import type { IndicatorKind } from '../services/stix/stix21.ts';

// TAXII 2.1 at /taxii2/ (outside the API base, documented by OASIS rather than by the OpenAPI
// document): discovery, one API root, read-only collections. Authentication, roles, rate limits
// and coins are the API's; every answer, errors included, is application/taxii+json;version=2.1.

/** Largest request a TAXII client may send: the collections are read-only, so nothing is accepted. */
const MAX_CONTENT_LENGTH = 0;

/** Whether an Accept header admits TAXII 2.1 (absent, a wildcard, or taxii+json without another version). */
export function acceptsTaxii21(accept: string | undefined): boolean {
  if (!accept || !accept.trim()) return true;
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    if (q && Number(q.slice(2)) === 0) return false;
    if (type === '*/*' || type === 'application/*') return true;
    if (type !== 'application/taxii+json') return false;
    const version = params.find((p) => p.startsWith('version='));
    return !version || version === 'version=2.1';
  });
}

function taxiiError(status: number, title: string, description: string | undefined, code: string, extra: Record<string, unknown>): TaxiiError {
  const errors = extra.errors as Array<{ path: string; message: string }> | undefined;
  const details = { ...extra };
  delete details.errors;
  return {
    title,
    ...(description ? { description } : {}),
    error_code: code,
    http_status: String(status),
    ...(errors || Object.keys(details).length > 0 ? { details: { ...details, ...(errors ? { errors } : {}) } } : {}),
  };
}

/** Bytes, not a string: fastify would append `; charset=utf-8` to a JSON media type TAXII names exactly. */
function send(reply: FastifyReply, body: unknown, headers: Record<string, string> = {}) {
  return reply.header('content-type', TAXII_MEDIA_TYPE).headers(headers).send(Buffer.from(JSON.stringify(body)));
}

function apiBaseOf(context: AppContext, request: FastifyRequest): string {
  return `${(context.config.publicUrl ?? `${request.protocol}://${request.host}`).replace(/\/+$/, '')}`;
}

function requireRoot(root: string): void {
  if (root !== TAXII_API_ROOT) throw new ApiError('not_found', `no API root ${root}; the one API root is ${TAXII_API_ROOT}`);
}

function requireCollection(root: string, id: string): IndicatorKind {
  requireRoot(root);
  const kind = collectionKind(id);
  if (!kind) throw new ApiError('not_found', `no collection ${id}`);
  return kind;
}

export const taxiiRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const reader = (request: FastifyRequest): TaxiiReader => ({ store: context.store, cursors: context.cursors, apiBase: `${apiBaseOf(context, request)}${API_BASE}` });
  const rootUrl = (request: FastifyRequest) => `${apiBaseOf(context, request)}${TAXII_BASE}/${TAXII_API_ROOT}/`;

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { code, detail, extra, headers } = errorAnswer(error, request);
    const { status, title } = ERROR_CATALOG[code];
    // Clients of TIPs answer a Basic challenge with the key as password.
    if (status === 401) headers['www-authenticate'] = 'Basic realm="Rampart TAXII", charset="UTF-8"';
    return reply.status(status).headers(headers).header('content-type', TAXII_MEDIA_TYPE).send(Buffer.from(JSON.stringify(taxiiError(status, title, detail, code, extra))));
  });
  app.setNotFoundHandler((request, reply) => {
    const { status, title } = ERROR_CATALOG.route_not_found;
    return reply.status(status).header('content-type', TAXII_MEDIA_TYPE).send(Buffer.from(JSON.stringify(taxiiError(status, title, `no TAXII resource ${request.method} ${request.url.split('?')[0]}`, 'route_not_found', {}))));
  });
  app.addHook('onRequest', async (request) => {
    if (!acceptsTaxii21(request.headers.accept)) throw new ApiError('not_acceptable', `this server answers ${TAXII_MEDIA_TYPE} only; the request accepts ${request.headers.accept}`);
  });

  const hidden = { hide: true } as const;

  app.get('/', { schema: hidden }, async (request, reply) =>
    send(reply, {
      title: 'Rampart TAXII 2.1',
      description: 'The alliance threat intelligence (IPv4, domains, URLs, file digests) as STIX 2.1 indicators, as each member organization sees it',
      default: rootUrl(request),
      api_roots: [rootUrl(request)],
    }),
  );

  app.get('/:api_root/', { schema: { ...hidden, params: TaxiiCollectionParams.pick({ api_root: true }) } }, async (request, reply) => {
    requireRoot(request.params.api_root);
    return send(reply, {
      title: 'Rampart alliance',
      description: 'One API root for the alliance: one read-only collection per indicator kind',
      versions: [TAXII_MEDIA_TYPE],
      max_content_length: MAX_CONTENT_LENGTH,
    });
  });

  app.get('/:api_root/collections/', { schema: { ...hidden, params: TaxiiCollectionParams.pick({ api_root: true }) } }, async (request, reply) => {
    requireRoot(request.params.api_root);
    return send(reply, { collections: TAXII_COLLECTIONS.map((c) => c.collection) });
  });

  app.get('/:api_root/collections/:collection_id/', { schema: { ...hidden, params: TaxiiCollectionParams } }, async (request, reply) => {
    requireCollection(request.params.api_root, request.params.collection_id);
    return send(reply, TAXII_COLLECTIONS.find((c) => collectionKind(request.params.collection_id) === c.kind)!.collection);
  });

  const feed = { config: { rampart: { coin: 'feed' as const } } };

  /** A page's answer: charged as a feed page (an empty one is free), with its date-added headers. */
  function sendPage(request: FastifyRequest, reply: FastifyReply, page: EntryPage, body: unknown) {
    chargeFeedPage(request, page.entries.length);
    return send(reply, body, dateAddedHeaders(page.entries));
  }

  const envelope = (page: EntryPage) => ({ more: page.more, ...(page.next ? { next: page.next } : {}), ...(page.entries.length > 0 ? { objects: page.entries.map((e) => e.object) } : {}) });

  app.get('/:api_root/collections/:collection_id/objects/', { ...feed, schema: { ...hidden, params: TaxiiCollectionParams, querystring: TaxiiObjectsQuery } }, async (request, reply) => {
    const { api_root, collection_id } = request.params;
    const kind = requireCollection(api_root, collection_id);
    const page = await collectionPage(reader(request), principalOf(request).org, collection_id, kind, request.query);
    return sendPage(request, reply, page, envelope(page));
  });

  app.get('/:api_root/collections/:collection_id/manifest/', { ...feed, schema: { ...hidden, params: TaxiiCollectionParams, querystring: TaxiiObjectsQuery } }, async (request, reply) => {
    const { api_root, collection_id } = request.params;
    const kind = requireCollection(api_root, collection_id);
    const page = await collectionPage(reader(request), principalOf(request).org, collection_id, kind, request.query);
    return sendPage(request, reply, page, { more: page.more, ...(page.next ? { next: page.next } : {}), ...(page.entries.length > 0 ? { objects: page.entries.map(manifestRecord) } : {}) });
  });

  app.get('/:api_root/collections/:collection_id/objects/:object_id/', { ...feed, schema: { ...hidden, params: TaxiiObjectParams, querystring: TaxiiObjectQuery } }, async (request, reply) => {
    const { api_root, collection_id, object_id } = request.params;
    const kind = requireCollection(api_root, collection_id);
    const page = await objectPage(reader(request), principalOf(request).org, collection_id, kind, object_id, request.query);
    return sendPage(request, reply, page, envelope(page));
  });

  app.get('/:api_root/collections/:collection_id/objects/:object_id/versions/', { ...feed, schema: { ...hidden, params: TaxiiObjectParams, querystring: TaxiiVersionsQuery } }, async (request, reply) => {
    const { api_root, collection_id, object_id } = request.params;
    const kind = requireCollection(api_root, collection_id);
    const page = await versionsPage(reader(request), principalOf(request).org, collection_id, kind, object_id, request.query);
    return sendPage(request, reply, page, { more: page.more, ...(page.next ? { next: page.next } : {}), ...(page.entries.length > 0 ? { versions: page.entries.map((e) => e.object.modified) } : {}) });
  });
};
