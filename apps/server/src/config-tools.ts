import { isIP } from 'node:net';
import { z } from 'zod';
import { CdnRefreshSource } from './services/enrichment/cdn-data.ts';

const flag = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

/** `1.2.3.4`, `1.2.3.4:5353`, `::1` or `[::1]:5353`: what node's Resolver#setServers takes. */
function isDnsServer(entry: string): boolean {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  if (bracketed) return isIP(bracketed[1]!) === 6 && (!bracketed[2] || Number(bracketed[2]) <= 65535);
  if (isIP(entry)) return true;
  const m = /^([\d.]+):(\d{1,5})$/.exec(entry);
  return Boolean(m && isIP(m[1]!) === 4 && Number(m[2]) <= 65535);
}

const commaList = z.string().transform((text) => text.split(',').map((s) => s.trim()).filter(Boolean));

const WG_KEY = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

const jsonValue = z.string().transform((text, ctx) => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be JSON' });
    return z.NEVER;
  }
});

/** Environment of the tools (DNS, CDN refresh) and the secure VPN; merged into ServerConfig. */
export const TOOLS_ENV = {
  DNS_SERVERS: commaList.pipe(z.array(z.string().refine(isDnsServer, 'each entry must be an IP address, optionally with :port')).max(8)).optional(),
  DNS_TIMEOUT_MS: z.coerce.number().int().min(50).max(30_000).default(2000),
  DNS_TRIES: z.coerce.number().int().min(1).max(5).default(2),
  REVERSE_DNS: flag.default(true),
  REVERSE_DNS_TIMEOUT_MS: z.coerce.number().int().min(50).max(10_000).default(500),
  CDN_REFRESH_SOURCES: jsonValue.pipe(z.record(z.string().min(1), z.array(CdnRefreshSource).max(16))).optional(),
  VPN_POOL: z.cidrv4().refine((c) => { const bits = Number(c.split('/')[1]); return bits >= 16 && bits <= 30; }, 'prefix length must be 16 to 30').default('10.99.0.0/24'),
  VPN_ENDPOINT: z.string().regex(/^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/, 'host:port').optional(),
  VPN_SERVER_PUBLIC_KEY: z.string().regex(WG_KEY, 'a WireGuard public key (44 characters of base64)').optional(),
  VPN_DNS: commaList.pipe(z.array(z.union([z.ipv4(), z.ipv6()])).max(4)).optional(),
  VPN_ALLOWED_IPS: commaList.pipe(z.array(z.union([z.cidrv4(), z.cidrv6()])).min(1).max(64)).default(['0.0.0.0/0', '::/0']),
  VPN_KEEPALIVE_SECONDS: z.coerce.number().int().min(0).max(65535).default(25),
  VPN_KEY_SECRET: z.string().min(16).optional(),
};

const ToolsEnv = z.object(TOOLS_ENV);
type ToolsEnv = z.output<typeof ToolsEnv>;

export interface DnsConfig {
  /** Resolver addresses; undefined = the system's (/etc/resolv.conf). */
  servers: string[] | undefined;
  timeoutMs: number;
  tries: number;
  reverse: boolean;
  reverseTimeoutMs: number;
}

export interface VpnConfig {
  pool: string;
  endpoint: string | undefined;
  serverPublicKey: string | undefined;
  dns: string[];
  allowedIps: string[];
  keepaliveSeconds: number;
  /** Encrypts client private keys at rest; when unset, a random secret kept in the store. */
  keySecret: string | undefined;
}

export interface ToolsConfig {
  dns: DnsConfig;
  /** Overrides of the refresh URLs in the CDN data file, by provider name. */
  cdnRefreshSources: Record<string, CdnRefreshSource[]> | undefined;
  vpn: VpnConfig;
}

export function toolsConfig(e: ToolsEnv): ToolsConfig {
  return {
    dns: { servers: e.DNS_SERVERS, timeoutMs: e.DNS_TIMEOUT_MS, tries: e.DNS_TRIES, reverse: e.REVERSE_DNS, reverseTimeoutMs: e.REVERSE_DNS_TIMEOUT_MS },
    cdnRefreshSources: e.CDN_REFRESH_SOURCES,
    vpn: {
      pool: e.VPN_POOL,
      endpoint: e.VPN_ENDPOINT,
      serverPublicKey: e.VPN_SERVER_PUBLIC_KEY,
      dns: e.VPN_DNS ?? [],
      allowedIps: e.VPN_ALLOWED_IPS,
      keepaliveSeconds: e.VPN_KEEPALIVE_SECONDS,
      keySecret: e.VPN_KEY_SECRET,
    },
  };
}
