import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { defineEnforcer } from '@rampart/plugin-kit';
import { createGroupEnforcer } from './group-adapter.ts';
import { WebApiTransport } from './web-api.ts';

export { CheckPointApiError, CheckPointTlsError } from './web-api.ts';
export { CheckPointTaskError } from './session.ts';
export { objectName } from './group-adapter.ts';

/** `AA:BB:…` (openssl x509 -fingerprint -sha256) or 64 hex digits, as Node reports it. */
const fingerprint = z
  .string()
  .regex(/^(?:[0-9A-Fa-f]{2}:){31}[0-9A-Fa-f]{2}$|^[0-9A-Fa-f]{64}$/, { message: 'a SHA-256 fingerprint: 32 hex bytes, colons optional' })
  .transform((v) => v.replaceAll(':', '').toUpperCase().replace(/(..)(?!$)/g, '$1:'));

const Options = z
  .strictObject({
    port: z.number().int().min(1).max(65535).default(443),
    ca_file: z.string().max(4096).default('').describe('PEM file of the CA (or the self-signed certificate) of the management server'),
    tls_fingerprint_sha256: z.union([z.literal(''), fingerprint]).default(''),
    object_prefix: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9_-]{0,30}_$/, { message: 'a letter, then letters, digits, _ or -, ending in _ (at most 32)' })
      .default('rampart_'),
    batch_size: z.number().int().min(1).max(5000).default(500).describe('Members per set-group call'),
    max_entries: z.number().int().min(1).max(20_000).default(5000),
    task_poll_seconds: z.number().min(0.001).max(60).default(2),
    keepalive_seconds: z.number().min(0.001).max(3600).default(60),
    timeout_seconds: z.number().int().min(1).max(600).default(120).describe('Limit of one API request'),
  })
  .default({
    port: 443,
    ca_file: '',
    tls_fingerprint_sha256: '',
    object_prefix: 'rampart_',
    batch_size: 500,
    max_entries: 5000,
    task_poll_seconds: 2,
    keepalive_seconds: 60,
    timeout_seconds: 120,
  });

const NAME = /^[^\s,]+(?: [^\s,]+)*$/;

export const CheckPointMgmtConfig = IpsEntries.firewall_mgmt_a.extend({ options: Options }).superRefine((cfg, ctx) => {
  if (!cfg.active) return;
  const need = (ok: unknown, path: (string | number)[], message: string) => ok || ctx.addIssue({ code: 'custom', path, message });
  need(cfg.address, ['address'], 'required when active');
  need(/^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:]+\]$/.test(cfg.address) || !cfg.address, ['address'], 'a host name or address, without scheme or port');
  need(cfg.username, ['username'], 'required when active');
  need(cfg.password, ['password'], 'required when active');
  need(NAME.test(cfg.group), ['group'], 'the name of the network group the drop rule uses');
  need(!cfg.policy || gatewayList(cfg.gateways).length > 0, ['gateways'], 'a comma-separated list of gateways is required with a policy');
  need(!cfg.gateways || cfg.policy, ['policy'], 'the policy package to install on the gateways');
  need(cfg.options.ca_file || cfg.options.tls_fingerprint_sha256, ['options', 'tls_fingerprint_sha256'], 'pin the server certificate, or set options.ca_file');
});
export type CheckPointMgmtConfig = z.infer<typeof CheckPointMgmtConfig>;

function gatewayList(gateways: string): string[] {
  return gateways
    .split(',')
    .map((g) => g.trim())
    .filter(Boolean);
}

export const checkpointMgmtEnforcer = defineEnforcer<CheckPointMgmtConfig>({
  name: 'checkpoint-mgmt',
  serves: 'firewall_mgmt_a',
  configSchema: CheckPointMgmtConfig,
  async create(config, ctx) {
    const o = config.options;
    const ca = o.ca_file ? await readFile(o.ca_file, 'utf8') : undefined;
    const transport = new WebApiTransport({
      host: config.address.replace(/^\[|\]$/g, ''),
      port: o.port,
      trust: { ...(ca ? { ca } : {}), ...(o.tls_fingerprint_sha256 ? { fingerprint256: o.tls_fingerprint_sha256 } : {}) },
      timeoutMs: o.timeout_seconds * 1000,
    });
    return createGroupEnforcer({
      transport,
      credentials: { user: config.username, password: config.password, domain: config.domain },
      group: config.group,
      policy: config.policy,
      targets: gatewayList(config.gateways),
      prefix: o.object_prefix,
      batchSize: o.batch_size,
      capacity: o.max_entries,
      pollMs: o.task_poll_seconds * 1000,
      keepaliveEvery: Math.max(1, Math.round(o.keepalive_seconds / o.task_poll_seconds)),
      log: ctx.log.child({ enforcer: 'checkpoint-mgmt', server: config.address }),
    });
  },
});
