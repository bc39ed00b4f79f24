import { z } from 'zod';
import { PF_LIST_FILE_KEY } from './constants.ts';
import { secret } from './secret-fields.ts';

/*
 * Entries of an agent's `ids` (detection sources) and `ips` (enforcement systems), keyed by
 * the specification's neutral labels. Empty text is the placeholder of an unset text field,
 * hence the '' defaults; whether an active entry has what it needs is for its plugin to say.
 */

const active = z.boolean().describe('Whether this integration is in use');
const text = z.string().max(1024).default('');
const path = z.string().max(4096).default('').describe('File path');
const command = z.string().max(4096).default('').describe('Shell command');
const secretText = secret(z.string().max(4096).default('').describe('Secret; returned masked'));
const minutesText = z
  .string()
  .regex(/^\d{0,9}$/, { message: 'a number of minutes, in a string' })
  .default('')
  .describe('Number of minutes, held in a string');

function entry<S extends z.ZodRawShape>(settings: S) {
  return z.strictObject({ active, ...settings });
}

/** An entry the contract does not know: `active` is required, its settings are free. */
export const UnknownIntegration = z.looseObject({ active }).meta({ description: 'Further integration (open set)' });
export type UnknownIntegration = z.infer<typeof UnknownIntegration>;

export const IdsEntries = {
  packet_filter: entry({}),
  bridge_filter: entry({}),
  pf_list: entry({}),
  waf_log: entry({ waf_logs: path.describe('Log file path') }),
  cdn_waf: entry({ cdn_waf_x_auth_email: text, cdn_waf_x_auth_key: secretText }),
  json_source: entry({ json: z.array(z.unknown()).max(10_000).default([]) }),
  ssh_log: entry({ ssh_log_location: path.describe('Log file path') }),
};

const withPassword = { connections: text, password: secretText, command };

const managedApi = { username: text, password: secretText, api: text, group: text, policy: text, action: text };

export const IpsEntries = {
  web_server_list: entry({ command }),
  packet_filter: entry({ acl: path, reload_command: command }),
  firewall_mgmt_a: entry({
    username: text,
    password: secretText,
    address: text,
    group: text,
    policy: text,
    domain: text,
    gateways: text,
  }),
  firewall_accel_a: entry({ ...withPassword, vsids: text.describe('Comma-separated list') }),
  firewall_b: entry({ ...withPassword, feeds: text, updates: minutesText }),
  csp: entry({ ...withPassword, feeds: text, updates: minutesText }),
  bridge_filter: entry({}),
  pf_list: entry({ [PF_LIST_FILE_KEY]: path, pflist_reload_command: command }),
  waf: entry({ ruleset: path, waf_reload_command: command }),
  cdn_waf: entry({ cdn_waf_x_auth_email: text, cdn_waf_x_auth_key: secretText }),
  router_a: entry({ router_host: text, router_user: text, router_password: secretText }),
  proxy_lb: entry({ lb_logs: path, lb_reload_command: command }),
  csv: entry({ csv_logs: path, csv_reload_command: command }),
  cloud_a: entry({ accessKeyId: text, secretAccessKey: secretText, region: text }),
  firewall_c: entry({ user: text, password: secretText, address: text, command }),
  endpoint_d: entry({
    username: text,
    password: secretText,
    api: text,
    fileslist_file: path,
    broker_ca_bundle: path,
    cert_file: path,
    private_key: secret(z.string().max(16_384).default('').describe('Secret; returned masked')),
  }),
  dns_e: entry({
    ...managedApi,
    view: text,
    domains_file: path,
    domains_file_whitelist: path,
    api_whitelist_url: text,
  }),
  proxy_f: entry({ ...managedApi, parent: z.string().max(1024).nullable().default(null), urls_file: path }),
};

const optionalEntries = <T extends Record<string, z.ZodType>>(entries: T) =>
  Object.fromEntries(Object.entries(entries).map(([label, schema]) => [label, schema.optional()])) as {
    [K in keyof T]: z.ZodOptional<T[K]>;
  };

export const AgentIds = z
  .object(optionalEntries(IdsEntries))
  .catchall(UnknownIntegration)
  .meta({ description: 'Detection sources the agent reads, keyed by integration label' });
export type AgentIds = z.infer<typeof AgentIds>;

export const AgentIps = z
  .object(optionalEntries(IpsEntries))
  .catchall(UnknownIntegration)
  .meta({ description: 'Enforcement systems the agent pushes blocking rules to, keyed by integration label' });
export type AgentIps = z.infer<typeof AgentIps>;

export type IdsLabel = keyof typeof IdsEntries;
export type IpsLabel = keyof typeof IpsEntries;
export const IDS_LABELS = Object.keys(IdsEntries) as IdsLabel[];
export const IPS_LABELS = Object.keys(IpsEntries) as IpsLabel[];

/**
 * Names an agent reports enforcement under (feedback `plugin`, sync `state` plugins): a label of
 * section 2.11 (`ips` or `ids`), `dry_run` (rampart-agent's enforcer that only writes what it would
 * block), `agent` (the agent itself, e.g. while `running` is `no`) or `all` (its total); an
 * enforcer instance of another kind than IPv4 as `<label>/<kind>` (`csv/url`), the agent's own
 * name for it, for the integrations that take those kinds. A closed set, so that an agent's record holds at most one entry per name.
 */
/** The integrations that enforce domains, URLs or file digests (the rest enforce IPv4 only). */
const KIND_LABELS: readonly string[] = ['dry_run', 'csv', 'dns_e', 'proxy_f', 'endpoint_d'] satisfies readonly ('dry_run' | IpsLabel)[];
const KIND_SUFFIXED = KIND_LABELS.flatMap((label) => (['domain', 'url', 'file'] as const).map((kind) => `${label}/${kind}`));
export const REPORTED_PLUGIN_NAMES: readonly [string, ...string[]] = ['agent', 'all', 'dry_run', ...new Set<string>([...IPS_LABELS, ...IDS_LABELS]), ...KIND_SUFFIXED];
export const ReportedPlugin = z
  .enum(REPORTED_PLUGIN_NAMES)
  .describe('An integration label of the agent configuration (ips or ids), `agent` or `all`; an enforcer of domains, URLs or file digests reports as `<label>/<kind>` (`dry_run/domain`)');
