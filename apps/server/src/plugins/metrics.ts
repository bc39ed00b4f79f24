import type { FastifyInstance } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError } from '@rampart/contracts';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Store } from '../store/index.ts';
import type { BatchTiming } from '../services/ipv4/ingest.ts';
import { agentDrift } from '../services/agents/summary.ts';
import { routeOf } from './route-config.ts';

export interface Metrics {
  registry: Registry;
  coinDebits: Counter<'kind'>;
  /** Authentication outcomes that the lock-outs act on (plugins/auth.ts). */
  auth: AuthMetrics;
  /** Stops observing the store. */
  close(): void;
  /** One committed `POST /ips` / `PUT /ips/{ip}` batch (services/ipv4/ingest.ts ReportBatcher). */
  ipv4IngestBatch(timing: BatchTiming): void;
}

export interface AuthMetrics {
  /** A failed authentication that was counted against its address (and key id). */
  failures: Counter<'reason'>;
  /** A lock-out that started (one per subject and lock-out, not per refused request). */
  lockouts: Counter<'subject'>;
  /** A request refused with 429 because its address or key id was locked out, or the unknown-key budget of all addresses or its network was spent. */
  refused: Counter<'subject'>;
  /** Look-ups of an API key id in the store (the work a guess costs). */
  lookups: Counter;
}

const INGEST_PHASES = ['begin', 'lock', 'write', 'commit'] as const;

/** What the store reports of itself: connections, fsyncs, the listener. */
function storeMetrics(registry: Registry, store: Store): void {
  new Gauge({
    name: 'rampart_store_pool_connections',
    help: 'Store connections by state',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const s = store.connection.stats();
      this.set({ state: 'total' }, s.total);
      this.set({ state: 'idle' }, s.idle);
      this.set({ state: 'waiting' }, s.waiting);
    },
  });
  new Counter({
    name: 'rampart_store_fsyncs_total',
    help: 'fsync(2) calls of the embedded store (PGlite on disk): each commit syncs its WAL',
    registers: [registry],
    collect() {
      const syncs = store.connection.stats().syncs;
      if (syncs !== undefined) {
        this.reset();
        this.inc(syncs);
      }
    },
  });
  // A replica whose LISTEN session is down serves requests but no live events (/readyz is 503).
  new Gauge({
    name: 'rampart_store_listener_up',
    help: '1 while live events can arrive (PostgreSQL LISTEN session open; always 1 on PGlite)',
    registers: [registry],
    collect() {
      this.set(store.connection.health().listening ? 1 : 0);
    },
  });
}

/**
 * Agents whose targets have not held what the server expects for longer than one sync interval
 * plus one reconcile (services/agents/drift.ts), by organization: read at each scrape.
 */
function driftMetrics(registry: Registry, store: Store): void {
  new Gauge({
    name: 'rampart_agents_drifting',
    help: 'Active agents drifting, by organization gid: an enforcer target read back differs from what the server expects of it for longer than one sync interval plus one reconcile',
    labelNames: ['org'],
    registers: [registry],
    async collect() {
      const now = Math.floor(Date.now() / 1000);
      const counts = new Map<string, number>();
      for (const { org_gid, row } of await store.agents.withDriftSince()) {
        counts.set(org_gid, (counts.get(org_gid) ?? 0) + (agentDrift(row, now).drifting ? 1 : 0));
      }
      this.reset();
      for (const [org, n] of counts) this.set({ org }, n);
    },
  });
}

/** Failed authentications and lock-outs (plugins/auth.ts counts them). */
function authMetrics(registry: Registry): AuthMetrics {
  return {
    failures: new Counter({
      name: 'rampart_auth_failures_total',
      help: 'Failed authentications counted towards lock-outs, by reason: unknown_key, wrong_secret, revoked_key, agent_key',
      labelNames: ['reason'],
      registers: [registry],
    }),
    lockouts: new Counter({
      name: 'rampart_auth_lockouts_total',
      help: 'Authentication lock-outs started, by subject (address, key_id)',
      labelNames: ['subject'],
      registers: [registry],
    }),
    refused: new Counter({
      name: 'rampart_auth_locked_out_requests_total',
      help: 'Requests refused with 429 while their address or key id was locked out, or the unknown key id budget of all addresses (all) or of their /24 (network) was spent, by subject',
      labelNames: ['subject'],
      registers: [registry],
    }),
    lookups: new Counter({
      name: 'rampart_auth_key_lookups_total',
      help: 'API key ids looked up in the store (unknown ids seen failing lately are refused without one)',
      registers: [registry],
    }),
  };
}

/** One registry per app instance, so several apps in one process (tests) do not collide. */
export function createMetrics(store: Store): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const coinDebits = new Counter({ name: 'rampart_coin_debits_total', help: 'Coins charged for successful requests', labelNames: ['kind'], registers: [registry] });
  storeMetrics(registry, store);
  driftMetrics(registry, store);
  const connectionEvents = new Counter({
    name: 'rampart_store_connection_events_total',
    help: 'Store connection state changes by role (pool, listener): lost, retry_failed, restored',
    labelNames: ['role', 'state'],
    registers: [registry],
  });
  const replayed = new Counter({
    name: 'rampart_store_notifications_replayed_total',
    help: 'Live events published while this replica was not listening, delivered when its listener came back',
    registers: [registry],
  });
  const gaps = new Counter({
    name: 'rampart_store_notification_gaps_total',
    help: 'Listener returns after more than the stored events cover: connected agents were asked to reconnect',
    registers: [registry],
  });
  const stopCounting = store.connection.onConnection((event) => {
    connectionEvents.inc({ role: event.role, state: event.state });
    if (event.state === 'restored' && event.replayed) replayed.inc(event.replayed);
    if (event.state === 'restored' && event.gap) gaps.inc();
  });
  const auth = authMetrics(registry);
  // Reports per transaction and where a batch's time goes: the batches run their statements one
  // at a time, so begin + lock + write per batch bounds the reports per second a replica stores.
  const batchReports = new Histogram({
    name: 'rampart_ipv4_ingest_batch_reports',
    help: 'IPv4 reports and decisions stored per transaction (group commit)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [registry],
  });
  const batchPhase = new Histogram({
    name: 'rampart_ipv4_ingest_batch_phase_seconds',
    help: 'Time an IPv4 report batch spends per phase: begin (connection and BEGIN), lock (first statement), write (the rest up to COMMIT), commit',
    labelNames: ['phase'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  });
  const phases = INGEST_PHASES.map((phase) => batchPhase.labels({ phase }));
  return {
    registry,
    coinDebits,
    auth,
    close: stopCounting,
    ipv4IngestBatch(timing) {
      batchReports.observe(timing.reports);
      INGEST_PHASES.forEach((phase, i) => phases[i]!.observe(timing[phase]));
    },
  };
}

/** `Authorization: Bearer <token>` equal to `token`, compared in constant time. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer (\S+)$/i.exec(header ?? '')?.[1];
  if (given === undefined) return false;
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  return timingSafeEqual(a, b);
}

/**
 * Prometheus metrics at GET /metrics. Public unless `token` is set (METRICS_TOKEN): then only a
 * request bearing it gets them, others a 401 problem+json. They name no organization, key or
 * address; README (Security) lists what they expose.
 */
export const metricsPlugin = fp<{ metrics: Metrics; token?: string | undefined }>(async (app: FastifyInstance, { metrics, token }) => {
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

  // A callback hook: an async one costs every request a promise and a microtask.
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, never the raw URL: label values stay bounded.
    const labels = { method: request.method, route: routeOf(request).url ?? 'unmatched', status: String(reply.statusCode) };
    requests.inc(labels);
    latency.observe(labels, reply.elapsedTime / 1000);
    done();
  });

  app.get('/metrics', { config: { rampart: { auth: 'public' } }, schema: { hide: true } }, async (request, reply) => {
    if (token !== undefined && !bearerMatches(request.headers.authorization, token)) {
      reply.header('www-authenticate', 'Bearer realm="metrics"');
      throw new ApiError('unauthorized', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
    }
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
});
