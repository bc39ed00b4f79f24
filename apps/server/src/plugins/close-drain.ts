import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * A closing server tells its keep-alive clients so. `app.close()` stops listening and closes the
 * connections idle at that moment, then waits for the others; a connection whose request was
 * still running becomes idle afterwards and would hold the close for the whole keep-alive timeout
 * (65 s), so a restarting replica stayed down that long. Every answer sent once closing has begun
 * carries `Connection: close`: Node ends that connection as soon as the answer is written.
 */
export const closeDrainPlugin = fp(async (app: FastifyInstance) => {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A callback hook: an async one costs every response a promise and a microtask.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
});
