import { promises as dns } from 'node:dns';
import { ApiError } from '@rampart/contracts';
import type { DnsConfig } from '../../config-tools.ts';

/** Forward and reverse look-ups through the configured resolver (default: the system's). */
export interface DnsLookup {
  /** A records of `domain`; throws not_found (NXDOMAIN), upstream_timeout or bad_gateway. */
  addressesOf(domain: string): Promise<string[]>;
  /** First PTR name of `ip`, or '' when there is none, it times out, or reverse look-ups are off. */
  reverseOf(ip: string): Promise<string>;
}

function resolver(config: DnsConfig, timeout: number, tries: number): dns.Resolver {
  const r = new dns.Resolver({ timeout, tries });
  if (config.servers) r.setServers(config.servers);
  return r;
}

const errorCode = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

export function createDnsLookup(config: DnsConfig): DnsLookup {
  const forward = resolver(config, config.timeoutMs, config.tries);
  // One short try: a PTR is decoration on /info and must not hold the answer up.
  const reverse = resolver(config, config.reverseTimeoutMs, 1);
  return {
    async addressesOf(domain) {
      try {
        return await forward.resolve4(domain);
      } catch (err) {
        switch (errorCode(err)) {
          case dns.NOTFOUND:
            throw new ApiError('not_found', `${domain} does not exist (NXDOMAIN)`);
          case dns.NODATA:
            return [];
          case dns.TIMEOUT:
            throw new ApiError('upstream_timeout', `the DNS resolver did not answer for ${domain} within ${config.timeoutMs} ms (${config.tries} tries)`);
          default:
            throw new ApiError('bad_gateway', `the DNS resolver failed for ${domain} (${errorCode(err) ?? 'unknown error'})`);
        }
      }
    },
    async reverseOf(ip) {
      if (!config.reverse) return '';
      try {
        const names = await reverse.reverse(ip);
        return names[0] ?? '';
      } catch {
        return '';
      }
    },
  };
}
