import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { defineEnforcer } from '@rampart/plugin-kit';
import { WriteGate } from './write-gate.ts';

export { IP_SET_ADDRESSES } from './limits.ts';

const endpoint = z.union([z.literal(''), z.url({ protocol: /^https?$/ })]).default('');

const AwsOptions = z
  .strictObject({
    network_acl_id: z.string().regex(/^$|^acl-[0-9a-f]{8,17}$/, { message: 'a network ACL id (acl-...)' }).default(''),
    nacl_first_rule: z.number().int().min(1).max(32766).default(100).describe('First ingress rule number the agent owns'),
    nacl_max_entries: z
      .number()
      .int()
      .min(1)
      .max(40)
      .default(18)
      .describe('Deny entries the agent may place (quota: 20 rules per direction, up to 40 on request)'),
    wafv2_scope: z.enum(['', 'REGIONAL', 'CLOUDFRONT']).default('').describe("'' disables WAFv2"),
    wafv2_ip_set_prefix: z.string().regex(/^[A-Za-z0-9_-]{1,120}$/).default('rampart'),
    wafv2_shards: z.number().int().min(1).max(100).default(10).describe('IP sets of 10,000 addresses each'),
    wafv2_write_interval_milliseconds: z.number().int().min(0).max(60_000).default(1000),
    ec2_endpoint: endpoint,
    wafv2_endpoint: endpoint,
  })
  .prefault({});

export const AwsConfig = IpsEntries.cloud_a.extend({ options: AwsOptions }).superRefine((cfg, ctx) => {
  if (!cfg.active) return;
  const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  if (!cfg.region) issue(['region'], 'required when active');
  if (!cfg.options.network_acl_id && !cfg.options.wafv2_scope) issue(['options'], 'set options.network_acl_id, options.wafv2_scope, or both');
  if (!!cfg.accessKeyId !== !!cfg.secretAccessKey) issue(['secretAccessKey'], 'give both keys, or neither for the default credential chain');
  if (cfg.options.nacl_first_rule + cfg.options.nacl_max_entries > 32767) issue(['options', 'nacl_first_rule'], 'rule numbers end at 32766');
});
export type AwsConfig = z.infer<typeof AwsConfig>;

export const awsEnforcer = defineEnforcer<AwsConfig>({
  name: 'aws',
  serves: 'cloud_a',
  configSchema: AwsConfig,
  async create(config, ctx) {
    // The SDK is loaded only when the enforcer is used: importing it costs ~75 MB of RSS, which
    // every agent would otherwise carry (the registry lists every plugin).
    const [{ EC2Client }, { WAFV2Client }, { createAwsEnforcer }] = await Promise.all([
      import('@aws-sdk/client-ec2'),
      import('@aws-sdk/client-wafv2'),
      import('./aws-enforcer.ts'),
    ]);
    const o = config.options;
    // Without keys the SDK's default chain applies (environment, profile, SSO, instance role).
    const credentials = config.accessKeyId ? { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } : undefined;
    const common = { region: config.region, credentials, maxAttempts: 3 };
    return createAwsEnforcer({
      nacl: o.network_acl_id
        ? {
            ec2: new EC2Client({ ...common, ...(o.ec2_endpoint ? { endpoint: o.ec2_endpoint } : {}) }),
            aclId: o.network_acl_id,
            firstRule: o.nacl_first_rule,
            slots: o.nacl_max_entries,
          }
        : undefined,
      waf: o.wafv2_scope
        ? {
            waf: new WAFV2Client({
              ...common,
              // CloudFront-scoped IP sets live in us-east-1 whatever the agent's region.
              ...(o.wafv2_scope === 'CLOUDFRONT' ? { region: 'us-east-1' } : {}),
              ...(o.wafv2_endpoint ? { endpoint: o.wafv2_endpoint } : {}),
            }),
            scope: o.wafv2_scope,
            prefix: o.wafv2_ip_set_prefix,
            shards: o.wafv2_shards,
            gate: new WriteGate(o.wafv2_write_interval_milliseconds),
          }
        : undefined,
      log: ctx.log.child({ enforcer: 'aws' }),
    });
  },
});
