import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '@rampart/contracts';
import { routeOf } from './route-config.ts';

export interface ListStreamOptions {
  /** Most list responses one key may have in flight on this replica; one more is 429. */
  perKey: number;
  /** A list response not fully handed to the socket this long after it started is cut off. */
  sendTimeoutMs: number;
}

/**
 * Text lists (routes priced `list`: `/flat`, `/ipv4`, the score lists) can be megabytes streamed
 * at the reader's pace, each holding a store cursor's worth of work and memory while it lasts.
 * A reader that stops reading would hold them forever, and one key could open any number. So each
 * key has a cap on the list responses it has open, and each response a deadline: past it the
 * connection is destroyed (the client sees a truncated body and a reset, never a 200 that lies).
 */
export const listStreamsPlugin = fp<ListStreamOptions>(async (app: FastifyInstance, { perKey, sendTimeoutMs }) => {
  const open = new Map<string, number>();

  // A callback hook: the requests of other routes pass it without a promise.
  app.addHook('preHandler', (request, reply, done) => {
    if (routeOf(request).config.rampart?.coin !== 'list' || !request.principal) return done();
    const keyId = request.principal.keyId;
    const count = open.get(keyId) ?? 0;
    if (count >= perKey) {
      void reply.header('retry-after', '1');
      return done(new ApiError('rate_limited', `this key already has ${count} list responses in flight (at most ${perKey}); retry when one is done`));
    }
    open.set(keyId, count + 1);
    const timer = setTimeout(() => {
      request.log.warn({ keyId, timeoutSeconds: sendTimeoutMs / 1000 }, 'list response not sent in time; connection closed');
      reply.raw.destroy();
    }, sendTimeoutMs);
    timer.unref();
    // 'close': the response was handed to the socket whole, or the connection went away.
    reply.raw.once('close', () => {
      clearTimeout(timer);
      const left = (open.get(keyId) ?? 1) - 1;
      if (left > 0) open.set(keyId, left);
      else open.delete(keyId);
    });
    done();
  });
});
