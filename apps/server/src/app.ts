import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, type onSendHookHandler } from 'fastify';
import type { DestinationStream } from 'pino';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { API_BASE, ApiError, TAXII_BASE, isLogSecret, redactLogSecrets } from '@rampart/contracts';
import type { AppConfig } from './config.ts';
import type { AppContext } from './context.ts';
import type { ConnectionEvent, Store } from './store/index.ts';
import { authPlugin } from './plugins/auth.ts';
import { agentCredential } from './plugins/agent-auth.ts';
import { coinsPlugin } from './plugins/coins.ts';
import { listStreamsPlugin } from './plugins/list-streams.ts';
import { DEFAULT_LEASE } from './services/coins/ledger.ts';
import { clientErrorHandler, errorsPlugin, frameworkErrorHandler } from './plugins/errors.ts';
import { closeDrainPlugin } from './plugins/close-drain.ts';
import { textGuardPlugin } from './plugins/text-guard.ts';
import { createMetrics, metricsPlugin, type Metrics } from './plugins/metrics.ts';
import { openapiDocument } from './openapi.ts';
import { consoleRoutes } from './routes/console.ts';
import { healthRoutes } from './routes/health.ts';
import { apiRoutes } from './routes/index.ts';
import { taxiiRoutes } from './routes/taxii.ts';
import { credentialFrom, parseApiKey } from './services/operators/api-keys.ts';
import { buildDate } from './services/build-info.ts';
import { cursorCodec } from './services/cursor.ts';
import { eventBus } from './services/events.ts';
import { createEnrichment } from './services/enrichment/enrichment.ts';
import { Ipv4Mirror } from './services/ipv4/mirror/index.ts';
import { ReportBatcher } from './services/ipv4/ingest.ts';
import { VpnService } from './services/vpn/vpn.ts';
import { ListBodyCache } from './services/list-body-cache.ts';
import { Ipv4Lists } from './services/ipv4/lists.ts';
import { Ipv4Reports } from './services/ipv4/reports.ts';
import { Rollups } from './services/operators/rollups.ts';
import { CrowdsecBouncers } from './services/crowdsec/bouncers.ts';
import { ROUTE_SNAPSHOT } from './plugins/route-config.ts';

export interface BuildAppOptions {
  config: AppConfig;
  store: Store;
  /** The IPv4 list mirror to use (null: none); by default the app loads its own once ready. */
  ipv4Mirror?: Ipv4Mirror | null;
  /** Where log lines go (default standard output); tests read them from a stream. */
  logStream?: DestinationStream;
}

/**
 * Secrets never reach a log line. The settings' secrets are declared in the contracts' schemas
 * and redacted at any depth by the log formatter (SECRET_KEYS); these paths are the transport's
 * own, which no settings schema declares.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  // CrowdSec bouncers send their agent key here.
  'req.headers["x-api-key"]',
  'headers["x-api-key"]',
  'config.databaseUrl',
  // Node's HTTP parser errors carry the request's raw bytes (its headers, a key among them);
  // fastify logs them at trace level when a request does not parse.
  'err.rawPacket',
];

/** How the control plane's logger keeps secrets out of its lines (bench/request-logger.ts measures it). */
export const LOG_REDACTION = {
  redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  // Walks only what a line logs; a line without a secret is not copied.
  // isLogSecret: every secret name of the platform and its plugins, anything named like a secret,
  // and credential headers (authorization, cookie, x-api-key, …), in any case, at any depth, in
  // Error objects and inside JSON strings.
  formatters: { log: (object: Record<string, unknown>) => redactLogSecrets(object, isLogSecret, '[redacted]') },
};


/**
 * An HTTP/1.1 request must name its Host (RFC 9112 §3.2): 400 problem+json when it does not.
 * A callback hook: an async one costs every request a promise and a microtask. The refusal leaves
 * after the microtasks, as the async hook's did (node's parser reports a malformed rest first).
 */
function requireHost(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
    const err = new ApiError('bad_request', 'an HTTP/1.1 request needs a Host header', { errors: [{ path: 'headers.host', message: 'required' }] });
    queueMicrotask(() => done(err));
    return;
  }
  done();
}

/** A deployment's failed-authentication budgets, as each of its replicas enforces them. */
function authFailureBudgets(config: AppConfig) {
  const share = (n: number) => Math.max(1, Math.floor(n / config.rateLimitReplicas));
  return {
    perAddress: share(config.authFailuresPerAddress),
    perKey: share(config.authFailuresPerKey),
    lockSeconds: config.authLockoutSeconds,
    unknownPerMinute: share(config.authUnknownKeysPerMinute ?? 120),
    unknownPerNetwork: share(config.authUnknownKeysPerNetwork ?? 30),
  };
}

/**
 * One line per state change of a store connection role, never one per failed request. When the
 * listener is back, the notifications sent while it was down are replayed (store/pg-driver.ts);
 * cached organization settings are dropped anyway, so that none outlives a change this replica
 * could not replay.
 */
function logConnectionEvent(log: FastifyBaseLogger, event: ConnectionEvent, store: Store): void {
  if (event.state === 'lost') log.error({ err: event.err, role: event.role }, 'store connection lost; reconnecting');
  else if (event.state === 'retry_failed') log.warn({ err: event.err, role: event.role, attempt: event.attempt, next_delay_ms: event.nextDelayMs }, 'store reconnection failed');
  else {
    log.info({ role: event.role, down_ms: event.downMs, replayed: event.replayed, gap: event.gap }, 'store connection restored');
    if (event.role === 'listener') store.settings.forget();
  }
}

/** Every store and service of the app, built once and handed to the plugins and routes. */
async function buildContext(o: { config: AppConfig; store: Store; ipv4Mirror: Ipv4Mirror | null | undefined; log: FastifyBaseLogger; metrics: Metrics }): Promise<AppContext> {
  const { config, store, metrics, log } = o;
  const enrichment = createEnrichment({ dataDir: config.dataDir });
  const events = eventBus(store.connection);
  const ipv4Mirror = o.ipv4Mirror === undefined ? new Ipv4Mirror(store.ipv4Mirror, enrichment, log) : o.ipv4Mirror;
  const rollups = new Rollups(store, log);
  const batcher = new ReportBatcher({ ingest: store.ipv4Ingest, events, log, observe: (timing) => metrics.ipv4IngestBatch(timing) });
  const ipv4Lists = new Ipv4Lists({ store, enrichment, mirror: ipv4Mirror, cache: new ListBodyCache(config.listCacheBytes) });
  return {
    config,
    store,
    metrics,
    buildDate: buildDate(),
    events,
    cursors: cursorCodec(config.cursorSecret ?? (await store.secrets.get('list_cursor'))),
    enrichment,
    ipv4Mirror,
    ipv4Reports: new Ipv4Reports({ config, store, enrichment, batcher, rollups }),
    ipv4Lists,
    vpn: new VpnService(store, config.tools.vpn),
    rollups,
    crowdsecBouncers: new CrowdsecBouncers({ store, ipv4Lists }),
  };
}

/** The control plane as a fastify instance that does not listen (tests use `inject`). */
export async function buildApp({ config, store, ipv4Mirror, logStream }: BuildAppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: config.logLevel,
      ...LOG_REDACTION,
      ...(logStream ? { stream: logStream } : {}),
    },
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    // 10,000-line lists and the docs page are large; keep-alive clients (firewalls) poll often.
    keepAliveTimeout: 65_000,
    // A request that arrives on a kept-alive connection once closing has begun is served (the
    // store closes only after the server has), answered with Connection: close (close-drain.ts).
    // fastify's default answers it with a bare 503 and no Retry-After: a client or balancer that
    // honours Retry-After (HAProxy's own 503 here carries one) had nothing to go by.
    return503OnClosing: false,
    // A URL-encoded 2048-character URL indicator can triple in length as a path parameter.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 6_500 },
    // Errors raised before routing (a malformed percent-escape, …) get the same problem+json.
    frameworkErrors: frameworkErrorHandler,
    // …and so do the requests node's HTTP parser refuses (header overflow, bad chunking, …).
    clientErrorHandler,
    // Node answers an HTTP/1.1 request without Host itself, 400 with an empty body; requireHost
    // below refuses it with a problem+json instead.
    http: { requireHostHeader: false },
  }).withTypeProvider<ZodTypeProvider>();
  // routeOf's snapshot of request.routeOptions, declared so that every request object has one shape.
  app.decorateRequest(ROUTE_SNAPSHOT, null);
  app.addHook('onRequest', requireHost);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  const metrics = createMetrics(store);
  app.addHook('onClose', async () => metrics.close());
  const stopLoggingConnections = store.connection.onConnection((event) => logConnectionEvent(app.log, event, store));
  app.addHook('onClose', async () => stopLoggingConnections());
  const context = await buildContext({ config, store, ipv4Mirror, log: app.log, metrics });

  // Hot paths read organization settings from the store's cache; a change on any replica drops it.
  const stopForgetting = await context.events.subscribe((event) => {
    if (event.type === 'settings_changed' && event.subject === 'organization') store.settings.forget(event.org_id);
  });
  app.addHook('onClose', async () => stopForgetting());

  if (context.ipv4Mirror) {
    const mirror = context.ipv4Mirror;
    // Loaded in the background: lists read SQL until it is ready.
    app.addHook('onReady', async () => void mirror.start());
    if (ipv4Mirror === undefined) app.addHook('onClose', async () => mirror.close());
    // Every write this replica acknowledges (any method but GET, HEAD and OPTIONS) is visible to
    // the look-ups after it (the mirror's freshness rule, Ipv4Mirror.freshForLookup). A route-level
    // hook: the look-ups themselves run none.
    app.addHook('onRoute', (route) => {
      if ([route.method].flat().every((m) => m === 'GET' || m === 'HEAD' || m === 'OPTIONS')) return;
      const noteWrite: onSendHookHandler = (_request, _reply, payload, done) => {
        mirror.noteWrite();
        done(null, payload);
      };
      route.onSend = [...[route.onSend ?? []].flat(), noteWrite];
    });
  }
  const rollups = context.rollups;
  app.addHook('onReady', async () => rollups.start());
  // Counted reports and coins are written before the store closes.
  app.addHook('onClose', async () => {
    await rollups.close().catch((err: unknown) => app.log.warn({ err }, 'could not store the last rollup counts'));
  });
  await app.register(closeDrainPlugin);
  await app.register(errorsPlugin);
  await app.register(textGuardPlugin);
  await app.register(swagger, openapiDocument(config));
  await app.register(rateLimit, {
    max: Math.max(1, Math.floor(config.rateLimitPerMinute / config.rateLimitReplicas)),
    timeWindow: 60_000,
    keyGenerator: (request) => {
      const credential = credentialFrom(request.headers.authorization);
      const keyId = credential && parseApiKey(credential)?.keyId;
      if (keyId) return keyId;
      // Agents count per key (its signature), not per address: many may sit behind one NAT.
      const agentKey = agentCredential(request);
      return (agentKey && `agent:${agentKey.token.slice(-43)}`) || request.ip;
    },
    errorResponseBuilder: (_request, ctx) => new ApiError('rate_limited', `rate limit of ${ctx.max} requests per minute exceeded; retry in ${Math.ceil(ctx.ttl / 1000)} s`),
  });
  await app.register(metricsPlugin, { metrics, token: config.metricsToken });
  await app.register(authPlugin, { store, cacheSeconds: config.authCacheSeconds, agentTokenSecret: config.agentTokenSecret, failures: authFailureBudgets(config), metrics: metrics.auth });
  await app.register(coinsPlugin, { store, prices: config.coinPrices, debits: metrics.coinDebits, leaseMax: config.coinLeaseMax ?? DEFAULT_LEASE.max, onSpent: (orgId, coins) => rollups.countCoins(orgId, coins) });
  await app.register(listStreamsPlugin, { perKey: config.listStreamsPerKey, sendTimeoutMs: config.listSendTimeoutSeconds * 1000 });
  await app.register(healthRoutes, { context });
  await app.register(apiRoutes, { prefix: API_BASE, context });
  await app.register(taxiiRoutes, { prefix: TAXII_BASE, context });
  await app.register(consoleRoutes);
  await app.register(swaggerUi, { routePrefix: `${API_BASE}/docs`, uiConfig: { deepLinking: true } });
  app.get(`${API_BASE}/openapi.json`, { config: { rampart: { auth: 'public' } }, schema: { hide: true } }, async () => app.swagger());
  return app;
}
