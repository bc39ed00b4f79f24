import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { IpsEntries } from '@rampart/contracts';
import { defineEnforcer, domainCodec, parseDomainList, readDomainListFile } from '@rampart/plugin-kit';
import { createRpzEnforcer } from './rpz-adapter.ts';
import { WapiClient } from './wapi.ts';

export { InfobloxTlsError, InfobloxWapiError, WapiClient } from './wapi.ts';
export { RPZ_CNAME } from './rpz-adapter.ts';

/** `AA:BB:…` (openssl x509 -fingerprint -sha256) or 64 hex digits, or '' (none); kept in Node's form. */
const fingerprint = z
  .string()
  .regex(/^$|^(?:[0-9A-Fa-f]{2}:){31}[0-9A-Fa-f]{2}$|^[0-9A-Fa-f]{64}$/, { message: 'a SHA-256 fingerprint: 32 hex bytes, colons optional' })
  .transform((v) => v.replaceAll(':', '').toUpperCase().replace(/(..)(?!$)/g, '$1:'));

const DEFAULTS = { dialect: 'infoblox' as const, ca_file: '', tls_fingerprint_sha256: '', batch_size: 500, page_size: 1000, max_entries: 100_000, passthru: [], timeout_seconds: 120 };

const Options = z
  .strictObject({
    dialect: z.literal('infoblox').default('infoblox').describe('dns_e dialect this plugin implements (bind: @rampart/enforcer-bind-rpz)'),
    ca_file: z.string().max(4096).default('').describe('PEM file of the CA (or the self-signed certificate) of the Grid Master'),
    tls_fingerprint_sha256: fingerprint.default('').describe("SHA-256 fingerprint of the Grid Master's certificate"),
    batch_size: z.number().int().min(1).max(5000).default(500).describe('Objects per WAPI request call (one transaction each)'),
    page_size: z.number().int().min(1).max(10_000).default(1000).describe('Records per page when reading the zone'),
    max_entries: z.number().int().min(1).max(1_000_000).default(100_000).describe('Domains the zone may hold (two records each)'),
    passthru: z.array(z.string().max(253)).max(100_000).default([]).describe('Names never blocked (passthru rules), in addition to domains_file_whitelist'),
    timeout_seconds: z.number().int().min(1).max(600).default(120).describe('Limit of one WAPI call'),
  })
  .default(DEFAULTS);

const ZONE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?$/;
const WAPI_URL = /^\/wapi\/v\d+(\.\d+)*\/?$/;

function wapiUrlOk(api: string): boolean {
  try {
    const url = new URL(api);
    return url.protocol === 'https:' && WAPI_URL.test(url.pathname) && !url.search && !url.username;
  } catch {
    return false;
  }
}

export const InfobloxRpzConfig = IpsEntries.dns_e.extend({ options: Options }).superRefine((cfg, ctx) => {
  const need = (ok: unknown, path: (string | number)[], message: string) => ok || ctx.addIssue({ code: 'custom', path, message });
  cfg.options.passthru.forEach((name, i) => need(domainCodec.canonical(name), ['options', 'passthru', i], 'not a domain name'));
  if (!cfg.active) return;
  need(wapiUrlOk(cfg.api), ['api'], 'the WAPI base URL, https://<grid master>/wapi/v<version>');
  need(cfg.username, ['username'], 'required when active');
  need(cfg.password, ['password'], 'required when active');
  need(ZONE.test(cfg.policy), ['policy'], 'the name of the response policy zone (zone_rp), such as rpz.example.org');
  need(!cfg.group || /^[A-Za-z0-9_.-]{1,64}$/.test(cfg.group), ['group'], 'letters, digits, _ . - (at most 64): it marks the records this agent owns');
  need(!cfg.view || /^[^/]{1,64}$/.test(cfg.view.trim()), ['view'], 'a DNS view name without / (empty: default)');
  need(canonicalOf(cfg.action) !== undefined, ['action'], 'nxdomain (or empty), nodata or a walled-garden domain name; NIOS has no drop rule for names');
});
export type InfobloxRpzConfig = z.infer<typeof InfobloxRpzConfig>;

/** The `canonical` of a blocking rule for the entry's `action`; undefined when it is not one. */
export function canonicalOf(action: string): string | undefined {
  const a = action.trim().toLowerCase();
  if (a === '' || a === 'nxdomain') return '';
  if (a === 'nodata') return '*';
  if (a === 'drop') return undefined;
  return domainCodec.canonical(action) ?? undefined;
}

/** The owner marker written as each record's `comment`: `rampart`, or `rampart:<group>`. */
export function ownerMarker(group: string): string {
  return group ? `rampart:${group}` : 'rampart';
}

/** Domain names of a whitelist file (plugin-kit's domain list format). */
export const parseWhitelist = parseDomainList;


export const infobloxRpzEnforcer = defineEnforcer<InfobloxRpzConfig>({
  name: 'infoblox-rpz',
  serves: 'dns_e',
  configSchema: InfobloxRpzConfig,
  kinds: ['domain'],
  kindsOf: () => ['domain'],
  async create(config, ctx) {
    const kind = ctx.kind ?? 'ipv4';
    if (kind !== 'domain') throw new Error(`infoblox-rpz: enforces domains only, not '${kind}'`);
    const o = config.options;
    const ca = o.ca_file ? await readFile(o.ca_file, 'utf8') : undefined;
    const client = new WapiClient({
      api: config.api,
      username: config.username,
      password: config.password,
      trust: { ...(ca ? { ca } : {}), ...(o.tls_fingerprint_sha256 ? { fingerprint256: o.tls_fingerprint_sha256 } : {}) },
      timeoutMs: o.timeout_seconds * 1000,
    });
    const zone = config.policy.replace(/\.$/, '');
    const view = config.view || 'default';
    const fixed = o.passthru.map((n) => domainCodec.canonical(n)!);
    // Whitelist decisions (Enforcer.allow): passthru rules, so a name under a blocked parent resolves.
    let decided: string[] = [];
    const enforcer = createRpzEnforcer({
      client,
      zone,
      view,
      owner: ownerMarker(config.group),
      canonical: canonicalOf(config.action)!,
      passthru: () => [...new Set([...fixed, ...readDomainListFile(config.domains_file_whitelist), ...decided])].sort(domainCodec.compare),
      batchSize: o.batch_size,
      pageSize: o.page_size,
      capacity: o.max_entries,
      log: ctx.log.child({ enforcer: 'infoblox-rpz', kind, zone, view }),
    });
    return Object.assign(enforcer, {
      allow(values: readonly string[]) {
        decided = values.flatMap((v) => domainCodec.canonical(v) ?? []);
      },
    });
  },
});
