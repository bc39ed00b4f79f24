import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Store } from '../store/index.ts';

export interface Metrics {
  registry: Registry;
  coinDebits: Counter<'kind'>;
}

/** One registry per app instance, so several apps in one process (tests) do not collide. */
export function createMetrics(store: Store): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const coinDebits = new Counter({ name: 'rampart_coin_debits_total', help: 'Coins charged for successful requests', labelNames: ['kind'], registers: [registry] });
  new Gauge({
    name: 'rampart_store_pool_connections',
    help: 'Store connections by state',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const s = store.db.stats();
      this.set({ state: 'total' }, s.total);
      this.set({ state: 'idle' }, s.idle);
      this.set({ state: 'waiting' }, s.waiting);
    },
  });
  return { registry, coinDebits };
}

export const metricsPlugin = fp<{ metrics: Metrics }>(async (app: FastifyInstance, { metrics }) => {
  const requests = new Counter({
    name: 'rampart_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [metrics.registry],
  });
  const latency = new Histogram({
    name: 'rampart_http_request_duration_seconds',
    help: 'HTTP request latency by route',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [metrics.registry],
  });

  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, never the raw URL: label values stay bounded.
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
    requests.inc(labels);
    latency.observe(labels, reply.elapsedTime / 1000);
  });

  app.get('/metrics', { config: { rampart: { auth: 'public' } }, schema: { hide: true } }, async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
});
