import { z } from 'zod';
import { IpsEntries, secret } from '@rampart/contracts';
import { defineEnforcer } from '@rampart/plugin-kit';
import { CloudflareApi } from './api.ts';
import { createCloudflareEnforcer } from './cloudflare-enforcer.ts';

export { CloudflareApi, CloudflareApiError } from './api.ts';

/** Items of one account-level IP list on most plans. */
export const CLOUDFLARE_LIST_ITEMS = 10_000;

const CloudflareOptions = z
  .strictObject({
    api_token: secret(z.string().max(4096).default('').describe('Secret; returned masked. Used instead of email + key')),
    account_id: z.string().regex(/^$|^[0-9a-f]{32}$/, { message: 'a 32-character hex account id' }).default(''),
    zone_id: z.string().regex(/^$|^[0-9a-f]{32}$/, { message: 'a 32-character hex zone id' }).default(''),
    list_name: z
      .string()
      .regex(/^[a-z0-9_]{1,50}$/, { message: 'lowercase letters, digits and _ (at most 50)' })
      .default('rampart_blocklist'),
    rule_description: z.string().min(1).max(500).default('rampart block list'),
    rule_action: z.enum(['block', 'managed_challenge', 'js_challenge', 'challenge']).default('block'),
    max_items: z.number().int().min(1).max(CLOUDFLARE_LIST_ITEMS).default(CLOUDFLARE_LIST_ITEMS),
    api_url: z.url({ protocol: /^https?$/ }).default('https://api.cloudflare.com/client/v4'),
    bulk_poll_milliseconds: z.number().int().min(10).max(60_000).default(1000),
    max_429_retries: z.number().int().min(0).max(10).default(5),
    timeout_seconds: z.number().int().min(1).max(600).default(120),
  })
  .prefault({});

export const CloudflareConfig = IpsEntries.cdn_waf.extend({ options: CloudflareOptions }).superRefine((cfg, ctx) => {
  if (!cfg.active) return;
  const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  if (!cfg.options.api_token && !(cfg.cdn_waf_x_auth_email && cfg.cdn_waf_x_auth_key)) {
    issue(['cdn_waf_x_auth_key'], 'cdn_waf_x_auth_email and cdn_waf_x_auth_key, or options.api_token, are required');
  }
  if (!cfg.options.account_id) issue(['options', 'account_id'], 'required when active');
  if (!cfg.options.zone_id) issue(['options', 'zone_id'], 'required when active');
});
export type CloudflareConfig = z.infer<typeof CloudflareConfig>;

export const cloudflareEnforcer = defineEnforcer<CloudflareConfig>({
  name: 'cloudflare',
  serves: 'cdn_waf',
  configSchema: CloudflareConfig,
  async create(config, ctx) {
    const o = config.options;
    const timeoutMs = o.timeout_seconds * 1000;
    const api = new CloudflareApi({
      baseUrl: o.api_url.replace(/\/+$/, ''),
      auth: o.api_token ? { token: o.api_token } : { email: config.cdn_waf_x_auth_email, key: config.cdn_waf_x_auth_key },
      timeoutMs,
      max429Retries: o.max_429_retries,
    });
    return createCloudflareEnforcer({
      api,
      accountId: o.account_id,
      zoneId: o.zone_id,
      listName: o.list_name,
      ruleDescription: o.rule_description,
      ruleAction: o.rule_action,
      capacity: o.max_items,
      pollIntervalMs: o.bulk_poll_milliseconds,
      timeoutMs,
      log: ctx.log.child({ enforcer: 'cloudflare' }),
    });
  },
});
