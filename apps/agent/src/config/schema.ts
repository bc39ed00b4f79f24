import { z } from 'zod';
import ipaddr from 'ipaddr.js';
import { canonicalDigest, canonicalDomain, canonicalUrl, isIpv4 } from '@rampart/contracts';

/**
 * IPv6 text only: ipaddr.js also takes IPv4 in inet_aton spellings (`010.0.0.1` is 8.0.0.1 to
 * it), which the never-block list would then drop, so IPv4 is left to the shared strict grammar.
 */
function isIpv6OrNetwork(text: string): boolean {
  if (!text.includes(':')) return false;
  try {
    return (text.includes('/') ? ipaddr.parseCIDR(text)[0] : ipaddr.parse(text)).kind() === 'ipv6';
  } catch {
    return false;
  }
}

/** An IPv4/IPv6 address or CIDR, in a spelling the never-block list parses later. */
export const AddressOrCidr = z
  .string()
  .max(64)
  .refine((text) => isIpv4(text) || isIpv6OrNetwork(text), { message: 'not an IP address or CIDR' });

/** Options that only make sense on this host; never sent to the control plane. */
export const LocalOptions = z
  .strictObject({
    state_dir: z.string().min(1).max(4096).default('/var/lib/rampart-agent'),
    allow_list: z.array(AddressOrCidr).max(10_000).default([]).describe('Operator allow-list: never blocked'),
    /** Domains never blocked, nor their sub-domains or parents (the control plane's host name is always protected). */
    allow_domains: z
      .array(z.string().max(253).refine((t) => canonicalDomain(t) !== undefined, { message: 'not a domain name' }))
      .max(10_000)
      .default([]),
    /** URL prefixes never blocked (compared in canonical form); a URL whose host is protected is never blocked either. */
    allow_urls: z
      .array(z.string().max(2048).refine((t) => canonicalUrl(t) !== undefined, { message: 'not an http, https or ftp URL' }))
      .max(10_000)
      .default([]),
    /** File digests (MD5, SHA1 or SHA256) never blocked: a file any of whose digests is listed is never blocked. */
    allow_digests: z
      .array(z.string().max(64).refine((t) => canonicalDigest(t) !== undefined, { message: 'not an MD5, SHA1 or SHA256 hex digest' }))
      .max(10_000)
      .default([]),
    metrics_host: z.string().min(1).max(255).default('127.0.0.1'),
    metrics_port: z.int().min(0).max(65_535).default(9464).describe('0 picks a free port'),
    log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    auth_scheme: z.enum(['bare', 'bearer']).default('bare'),
    full_reconcile_hours: z.number().gt(0).max(24 * 7).default(6),
    /**
     * How often every enforcer reads its target back and re-asserts it when someone else changed
     * it (a firewall reload, `nft flush ruleset`): the longest a host stays unprotected.
     */
    reconcile_seconds: z.number().min(1).max(86_400).default(60),
    settings_pull_minutes: z.number().gt(0).max(24 * 60).default(5),
    /**
     * Longest one enforcer call (a replace, a diff, a read-back) may run before it is aborted.
     * Each enforcer runs on its own queue, so a slow one delays only itself.
     */
    enforcer_timeout_seconds: z.number().min(1).max(3600).default(120),
    /** How often every enforcer's healthcheck runs (also once when it is created). */
    healthcheck_seconds: z.number().min(1).max(86_400).default(60),
    /** Longest a graceful stop waits for enforcer calls in progress (they are aborted first). */
    stop_timeout_seconds: z.number().min(0).max(600).default(10),
    /** Overrides the schedule derived from `sync_time` (cron syntax, 5 fields or 6 with seconds first; see runtime/scheduler.ts). */
    sync_cron: z.string().min(9).max(128).optional(),
    /** Accept syncs that remove more than `max_removal_fraction` of the set, or come back empty. */
    force_sync: z.boolean().default(false),
    max_removal_fraction: z.number().gt(0).max(1).default(0.5),
    /** Page size of the /ips feed walk. */
    feed_page_size: z.int().min(1).max(1000).default(1000),
    websocket: z.boolean().default(true),
    /**
     * Per `ids` label: the source plugin's local `options` (mode, start_at, max_retry,
     * find_time_seconds, severity, ...), validated by that plugin's schema. Kept here because the
     * server's settings document holds only the specification's fields.
     */
    sources: z.record(z.string().max(64), z.record(z.string(), z.unknown())).default({}),
    /**
     * Per `ips` label: the enforcer plugin's local `options` (backend, table, netns, capacity,
     * endpoints, ...), merged into the entry and validated by that plugin's schema.
     */
    enforcers: z.record(z.string().max(64), z.record(z.string(), z.unknown())).default({}),
  })
  .prefault({});
export type LocalOptions = z.infer<typeof LocalOptions>;

export const ControlPlaneUrl = z
  .url({ protocol: /^https?$/ })
  .max(2048)
  .refine((u) => /\/api\/v1\/?$/.test(new URL(u).pathname), { message: 'must end in /api/v1' });
