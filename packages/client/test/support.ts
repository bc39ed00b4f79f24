import Fastify, { type FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';

/** A real HTTP server on an ephemeral loopback port; `hits` counts requests per route key. */
export async function listen(build: (app: FastifyInstance) => void): Promise<{ app: FastifyInstance; base: string; close(): Promise<void> }> {
  const app = Fastify({ logger: false });
  build(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return { app, base: `http://127.0.0.1:${port}/api/v1`, close: () => app.close() };
}

export const fastBackoff = { baseMs: 2, maxMs: 10 };

export function problem(code: string, status: number, detail: string, extra: Record<string, unknown> = {}) {
  return { type: `https://rampart.dev/problems/${code}`, title: code, status, detail, instance: '/api/v1/x', ...extra };
}
