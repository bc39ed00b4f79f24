import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { ApiError, ERROR_CATALOG, PROBLEM_BASE, type ErrorCode } from '@rampart/contracts';
import { StoreUnavailableError } from '../store/index.ts';

/** What a client is told to wait while the database is unreachable (the listener retries within 5 s). */
export const STORE_RETRY_AFTER_SECONDS = 5;

interface FieldError {
  path: string;
  message: string;
}

/** fastify's own error codes, mapped to the catalog so every 4xx looks the same. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'bad_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'bad_request',
  FST_ERR_CTP_INSTANCE_ALREADY_STARTED: 'internal',
};

function sendProblem(reply: FastifyReply, request: FastifyRequest, code: ErrorCode, detail: string | undefined, extra: Record<string, unknown> = {}) {
  const entry = ERROR_CATALOG[code];
  return reply
    .status(entry.status)
    .type('application/problem+json')
    .send(
      JSON.stringify({
        type: `${PROBLEM_BASE}${code}`,
        title: entry.title,
        status: entry.status,
        detail: detail ?? entry.title,
        instance: request.url.split('?')[0],
        ...extra,
      }),
    );
}

function fieldErrors(error: FastifyError): FieldError[] {
  if (hasZodFastifySchemaValidationErrors(error)) {
    return error.validation.map((v) => {
      const location = v.instancePath.replace(/^\//, '').replaceAll('/', '.');
      const where = (error.validationContext ?? 'body') as string;
      return { path: location ? `${where}.${location}` : where, message: v.message ?? 'invalid' };
    });
  }
  return (error.validation ?? []).map((v) => ({ path: v.instancePath || (error.validationContext ?? ''), message: v.message ?? 'invalid' }));
}

/** fastify's `frameworkErrors`: failures before a route is chosen (bad percent-escapes, …). */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const message = error.code === 'FST_ERR_BAD_URL' ? 'the URL has an invalid percent-escape' : error.message;
  void sendProblem(reply, request, 'bad_request', message, { errors: [{ path: 'url', message }] });
}

/** The request-target's path of the raw bytes node could not parse, when there is one. */
function rawInstance(raw: unknown): string {
  if (!Buffer.isBuffer(raw)) return '';
  const first = raw.subarray(0, 4096).toString('latin1').split('\r\n', 1)[0] ?? '';
  const target = /^[A-Z]+ (\/[^ ?]*)/.exec(first)?.[1] ?? '';
  return /^[\x21-\x7e]*$/.test(target) ? target : '';
}

/**
 * fastify's `clientErrorHandler`: what node's HTTP parser refuses before fastify sees a request
 * (header overflow, bad chunking, a Content-Length the bytes do not match, a request timeout)
 * is answered with the same problem+json as every other error, then the connection closes.
 * A client that is gone (an aborted upload, a reset) gets nothing: there is no one to tell.
 */
export function clientErrorHandler(this: FastifyInstance, error: Error & { code?: string; rawPacket?: unknown }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [code, detail]: [ErrorCode, string] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? ['request_timeout', 'the request was not received in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? ['headers_too_large', 'the request headers exceed the size the server accepts']
        : error.code === 'HPE_INVALID_EOF_STATE'
          ? ['bad_request', 'the request ended before its body was complete']
          : ['bad_request', `malformed HTTP request${error.code ? ` (${error.code})` : ''}`];
  const entry = ERROR_CATALOG[code];
  const body = JSON.stringify({ type: `${PROBLEM_BASE}${code}`, title: entry.title, status: entry.status, detail, instance: rawInstance(error.rawPacket) });
  this.log.debug({ err: error }, 'client error');
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(
    `HTTP/1.1 ${entry.status} ${STATUS_CODES[entry.status]}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** What an error is answered with: a catalog code, its detail, extra members and headers. */
export interface ErrorAnswer {
  code: ErrorCode;
  detail: string | undefined;
  extra: Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * The one mapping from what a request failed with to the catalog (problem+json everywhere; the
 * TAXII routes write the same answer as a TAXII error message). Logs what is the server's fault.
 */
export function errorAnswer(error: FastifyError, request: FastifyRequest): ErrorAnswer {
  const answer = (code: ErrorCode, detail: string | undefined, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): ErrorAnswer => ({ code, detail, extra, headers });
  if (error instanceof StoreUnavailableError || error.cause instanceof StoreUnavailableError) {
    // Logged once per outage by the store's connection events, not once per request.
    return answer('store_unavailable', 'the database is not reachable; retry later', {}, { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) });
  }
  if (error instanceof ApiError) {
    if (error.status >= 500) request.log.error({ err: error }, 'request failed');
    return answer(error.code, error.detail, { ...(error.errors ? { errors: error.errors } : {}), ...(error.extra ?? {}) });
  }
  if (error.validation) {
    const errors = fieldErrors(error);
    return answer('validation_failed', errors.map((e) => `${e.path}: ${e.message}`).join('; '), { errors });
  }
  if (isResponseSerializationError(error)) {
    request.log.error({ err: error }, 'response did not match its contract');
    return answer('internal', undefined);
  }
  const mapped = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (mapped === 'bad_request' && error.code?.startsWith('FST_ERR_CTP_')) return answer(mapped, error.message, { errors: [{ path: 'body', message: error.message }] });
  if (mapped) return answer(mapped, mapped === 'internal' ? undefined : error.message);
  const status = error.statusCode ?? 500;
  if (status === 429) return answer('rate_limited', error.message);
  if (status >= 400 && status < 500) {
    const code = (Object.entries(ERROR_CATALOG).find(([, e]) => e.status === status)?.[0] ?? 'bad_request') as ErrorCode;
    return answer(code, error.message);
  }
  request.log.error({ err: error }, 'unhandled error');
  return answer('internal', undefined);
}

export const errorsPlugin = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { code, detail, extra, headers } = errorAnswer(error, request);
    void reply.headers(headers);
    return sendProblem(reply, request, code, detail, extra);
  });

  app.setNotFoundHandler((request, reply) => sendProblem(reply, request, 'route_not_found', `no route ${request.method} ${request.url.split('?')[0]}`));
});
