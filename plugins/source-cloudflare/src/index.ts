import { IdsEntries, secret } from '@rampart/contracts';
import { defineSource, SourceOptionsBase } from '@rampart/plugin-kit';
import { z } from 'zod';
import { FirewallEventParser } from './events.ts';
import { startPoller } from './poller.ts';

export { CloudflareApiError, FIREWALL_EVENTS_QUERY, firewallEvents, listZones } from './api.ts';
export { FirewallEvent, FirewallEventParser, actionsFor, eventDetection } from './events.ts';
export { startPoller } from './poller.ts';

export const CloudflareOptions = SourceOptionsBase.extend({
  api_base: z.url({ protocol: /^https?$/ }).default('https://api.cloudflare.com/client/v4'),
  /** Zones to read (32-hex zone ids); empty: every zone the credentials can list. */
  zone_ids: z.array(z.string().regex(/^[0-9a-f]{32}$/, 'a 32-hex Cloudflare zone id')).max(500).default([]),
  poll_interval_seconds: z.number().int().min(10).max(3600).default(60),
  lookback_seconds: z.number().int().min(0).max(86_400).default(900),
  lag_seconds: z.number().int().min(0).max(3600).default(60),
  page_size: z.number().int().min(1).max(10_000).default(1000),
});

export const CloudflareSourceConfig = IdsEntries.cdn_waf.extend({
  cdn_waf_x_auth_email: z.email('the Cloudflare account e-mail').max(1024),
  cdn_waf_x_auth_key: secret(z.string().min(1, 'the Cloudflare API key is required').max(4096).describe('Secret; returned masked')),
  options: CloudflareOptions.prefault({}),
});
export type CloudflareSourceConfig = z.infer<typeof CloudflareSourceConfig>;

/** `cdn_waf`: Cloudflare firewall events (blocks, failed challenges) through the GraphQL analytics API. */
export const cloudflareSource = defineSource<CloudflareSourceConfig>({
  name: 'cloudflare',
  serves: 'cdn_waf',
  configSchema: CloudflareSourceConfig,
  parseDefaults: { active: true, cdn_waf_x_auth_email: 'parse@example.invalid', cdn_waf_x_auth_key: 'unused-by-parse' },
  createParser: (_config, mode) => new FirewallEventParser(mode),
  start: (config, mode, ctx) =>
    startPoller(
      {
        apiBase: config.options.api_base,
        email: config.cdn_waf_x_auth_email,
        key: config.cdn_waf_x_auth_key,
        zoneIds: config.options.zone_ids,
        mode,
        pollIntervalSeconds: config.options.poll_interval_seconds,
        lookbackSeconds: config.options.lookback_seconds,
        lagSeconds: config.options.lag_seconds,
        pageSize: config.options.page_size,
      },
      ctx,
    ),
});
