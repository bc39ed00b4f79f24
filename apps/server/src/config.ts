import { z } from 'zod';
import { TOOLS_ENV, toolsConfig, type ToolsConfig } from './config-tools.ts';
import { resolve } from 'node:path';
import { serverPath } from './paths.ts';

/** Coin price per endpoint kind; a request of a kind priced 0 is free. */
export const CoinPrices = z
  .object({
    lookup: z.number().int().min(0).default(1),
    deep_scan: z.number().int().min(0).default(5),
    feed: z.number().int().min(0).default(1),
    list: z.number().int().min(0).default(2),
    report: z.number().int().min(0).default(0),
    decision: z.number().int().min(0).default(0),
    tool: z.number().int().min(0).default(1),
    stix: z.number().int().min(0).default(1),
    vpn: z.number().int().min(0).default(10),
  })
  .strict();
export type CoinPrices = z.infer<typeof CoinPrices>;
export type CoinKind = keyof CoinPrices;

const jsonObject = z.string().transform((text, ctx) => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object' });
    return z.NEVER;
  }
});

const flag = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

/** fastify's trustProxy: which peers' X-Forwarded-For names the client (limits count that client). */
export type TrustProxy = boolean | string[];

export const ServerConfig = z.object({
  DATABASE_URL: z.string().min(1).optional(),
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  DATA_DIR: z.string().min(1).default('./data'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PUBLIC_URL: z.url().optional(),
  COIN_PRICES: jsonObject.pipe(CoinPrices.partial()).optional(),
  COIN_LEASE_MAX: z.coerce.number().int().min(0).max(1_000_000).default(1024),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(6000),
  RATE_LIMIT_REPLICAS: z.coerce.number().int().min(1).max(1000).default(1),
  AUTH_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1).default(10),
  AUTH_FAILURES_PER_KEY: z.coerce.number().int().min(1).default(30),
  AUTH_LOCKOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
  AUTH_UNKNOWN_KEYS_PER_MINUTE: z.coerce.number().int().min(1).default(120),
  AUTH_UNKNOWN_KEYS_PER_NETWORK: z.coerce.number().int().min(1).default(30),
  TRUST_PROXY: z
    .string()
    .regex(/^(true|false|[0-9a-fA-F.:/]+(,[0-9a-fA-F.:/]+)*)$/, 'true, false or comma-separated proxy addresses/CIDRs')
    .transform((v): TrustProxy => (v === 'true' ? true : v === 'false' ? false : v.split(',')))
    .default(false),
  LIST_STREAMS_PER_KEY: z.coerce.number().int().min(1).max(1000).default(4),
  LIST_SEND_TIMEOUT_SECONDS: z.coerce.number().min(1).max(86_400).default(600),
  LIST_CACHE_MB: z.coerce.number().min(0).max(65_536).default(96),
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  AUTH_CACHE_SECONDS: z.coerce.number().min(0).max(300).default(5),
  PG_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  RAMPART_DEMO: flag.default(true),
  RAMPART_INSTANCE: z.string().min(1).default('standalone'),
  CURSOR_SECRET: z.string().min(16).optional(),
  ...TOOLS_ENV,
  AGENT_TOKEN_SECRET: z.string().min(32).optional(),
  METRICS_TOKEN: z.string().min(16, 'at least 16 characters').max(512).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces').optional(),
  SYNC_HEARTBEAT_SECONDS: z.coerce.number().min(1).max(600).default(30),
  ALLOW_NON_PUBLIC_REPORTS: flag.default(false),
  MAX_REPORT_PREFIX: z.coerce.number().int().min(0).max(32).default(16),
  MAX_DECISION_PREFIX: z.coerce.number().int().min(0).max(32).default(8),
});
export type ServerConfigInput = z.input<typeof ServerConfig>;

export interface AppConfig {
  databaseUrl: string | undefined;
  host: string;
  port: number;
  dataDir: string;
  logLevel: z.infer<typeof ServerConfig>['LOG_LEVEL'];
  publicUrl: string | undefined;
  coinPrices: CoinPrices;
  /** Most coins a replica takes from an organization's balance at once (0: every charge is a statement). See CoinLedger. */
  coinLeaseMax?: number;
  /** Requests per minute per key (per address without one), for the whole deployment. */
  rateLimitPerMinute: number;
  /** Replicas sharing the budgets: each replica enforces budget / replicas (docs/api.md, Rate limits). */
  rateLimitReplicas: number;
  /** Failed authentications per address, and per API key id, within 10 minutes before a lock-out. */
  authFailuresPerAddress: number;
  authFailuresPerKey: number;
  /** First lock-out; repeated lock-outs double it, up to an hour. */
  authLockoutSeconds: number;
  /** Failed authentications with unknown key ids per minute, from all addresses and from one /24 (/48): beyond, 429. */
  authUnknownKeysPerMinute?: number;
  authUnknownKeysPerNetwork?: number;
  /** Proxies whose X-Forwarded-For is believed (fastify trustProxy); false: the peer is the client. */
  trustProxy: TrustProxy;
  /** List responses (priced `list`) one key may have in flight on a replica. */
  listStreamsPerKey: number;
  /** Seconds a list response may take to reach the socket before its connection is closed. */
  listSendTimeoutSeconds: number;
  /** Byte budget of the rendered /flat and /ipv4 bodies kept (services/list-body-cache.ts); 0 keeps none. */
  listCacheBytes: number;
  bodyLimitBytes: number;
  authCacheSeconds: number;
  pgPoolMax: number;
  demo: boolean;
  instance: string;
  /** Signs list cursors; when unset, a random secret kept in the store (shared by its replicas). */
  cursorSecret: string | undefined;
  /** DNS tools, CDN list refresh and the secure VPN (config-tools.ts). */
  tools: ToolsConfig;
  /** Signs agent keys (JWT, HS256); when unset, a random secret kept in the store (shared by its replicas). */
  agentTokenSecret: string | undefined;
  /** When set, GET /metrics answers only `Authorization: Bearer <token>` (docs/security.md). */
  metricsToken?: string | undefined;
  /** Seconds between sync-channel pings; a peer silent for two of them is dropped. */
  syncHeartbeatSeconds: number;
  /** Reports of private, loopback, documentation, … addresses are accepted (labs); refused otherwise. */
  allowNonPublicReports: boolean;
  /** Widest network a report may name (`/16` by default; `/15` and wider are refused). */
  maxReportPrefix: number;
  /** Widest network a decision may name (`/8` by default), except inside the private-use ranges. */
  maxDecisionPrefix: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
}

/** Reads the environment once, at start; every problem is reported together. */
export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const parsed = ServerConfig.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')));
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`));
  }
  const e = parsed.data;
  return {
    databaseUrl: e.DATABASE_URL,
    host: e.HOST,
    port: e.PORT,
    // Relative to the server package (apps/server), wherever the process started: `npm start`,
    // `npm run rampart` and `npx rampart` from the repository root all open the same store.
    dataDir: resolve(serverPath(), e.DATA_DIR),
    logLevel: e.LOG_LEVEL,
    publicUrl: e.PUBLIC_URL,
    coinPrices: CoinPrices.parse(e.COIN_PRICES ?? {}),
    coinLeaseMax: e.COIN_LEASE_MAX,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    rateLimitReplicas: e.RATE_LIMIT_REPLICAS,
    authFailuresPerAddress: e.AUTH_FAILURES_PER_ADDRESS,
    authFailuresPerKey: e.AUTH_FAILURES_PER_KEY,
    authLockoutSeconds: e.AUTH_LOCKOUT_SECONDS,
    authUnknownKeysPerMinute: e.AUTH_UNKNOWN_KEYS_PER_MINUTE,
    authUnknownKeysPerNetwork: e.AUTH_UNKNOWN_KEYS_PER_NETWORK,
    trustProxy: e.TRUST_PROXY,
    listStreamsPerKey: e.LIST_STREAMS_PER_KEY,
    listSendTimeoutSeconds: e.LIST_SEND_TIMEOUT_SECONDS,
    listCacheBytes: Math.round(e.LIST_CACHE_MB * 1024 * 1024),
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    authCacheSeconds: e.AUTH_CACHE_SECONDS,
    pgPoolMax: e.PG_POOL_MAX,
    demo: e.RAMPART_DEMO,
    instance: e.RAMPART_INSTANCE,
    cursorSecret: e.CURSOR_SECRET,
    tools: toolsConfig(e),
    agentTokenSecret: e.AGENT_TOKEN_SECRET,
    metricsToken: e.METRICS_TOKEN,
    syncHeartbeatSeconds: e.SYNC_HEARTBEAT_SECONDS,
    allowNonPublicReports: e.ALLOW_NON_PUBLIC_REPORTS,
    maxReportPrefix: e.MAX_REPORT_PREFIX,
    maxDecisionPrefix: e.MAX_DECISION_PREFIX,
  };
}

/** A configuration for tests and embedding: defaults plus overrides, no environment. */
export function testConfig(overrides: Partial<AppConfig> = {}): AppConfig {
  return { ...loadConfig({}), demo: false, logLevel: 'silent', ...overrides };
}
