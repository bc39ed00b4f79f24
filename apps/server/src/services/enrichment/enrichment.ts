import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { continents, countries, type TCountryCode } from 'countries-list';
import type { CdnRecord, IpInfo } from '@rampart/contracts';
import { defaultAsnCsvPath, loadAsnIndex, type AsnEntry } from './asn.ts';
import { readCdnDataFile, SHIPPED_CDN_FILE } from './cdn-data.ts';
import { CdnIndex } from './cdn-index.ts';
import { parseIpv4Address } from '@rampart/contracts';
import { defaultGeoMmdbPath, loadGeoReader, type GeoRow } from './geo.ts';
import type { Ipv4RangeIndex } from './range-index.ts';

export type { AsnEntry } from './asn.ts';

/** Where an address is, from the offline city database plus country facts. */
export interface GeoInfo {
  countryCode: string;
  country: string;
  continentCode: string;
  continent: string;
  region: string;
  regionName: string;
  city: string;
  district: string;
  zip: string;
  lat: number;
  lon: number;
  timezone: string;
  currency: string;
}

/**
 * Offline facts about an address, all synchronous and allocation-light so that list endpoints
 * (`/flat`, IPv4 records' `ip_info`) can call them per row. Nothing here touches the network.
 */
export interface Enrichment {
  /** The AS announcing an IPv4 address, or null (private, reserved, unannounced). */
  asnOf(ip: string): AsnEntry | null;
  /** `asnOf` for an IPv4 address as an unsigned 32-bit number. */
  asnOfNumber(ip: number): AsnEntry | null;
  /** The well-known CDN / cloud edge whose ranges hold `ip` (IPv4 or IPv6), or null. */
  cdnOf(ip: string): string | null;
  /** `cdnOf` for an IPv4 address as an unsigned 32-bit number. */
  cdnOfNumber(ip: number): string | null;
  /** Cloud or CDN address: in a CDN range or announced by a hosting operator's AS. */
  isHosting(ip: string): boolean;
  /** City-level location of an IPv4 address, or null when the database has none. */
  geoOf(ip: string): GeoInfo | null;
  /** The `ip_info` object of an IPv4 record (spec 2.3), or null when nothing is known. */
  ipInfo(ip: string): IpInfo | null;
  /** The CDN list of `GET /info/cdn/list` and the date of its data. */
  cdnList(): { date: string; records: CdnRecord[] };
}

export interface EnrichmentOptions {
  /** Directory where `rampart cdn refresh` writes `cdn-ranges.json`; it wins over the shipped file. */
  dataDir?: string;
  asnCsvPath?: string;
  geoMmdbPath?: string;
  cdnFilePath?: string;
}

export const CDN_FILE_NAME = 'cdn-ranges.json';

/** The CDN data file in use: the operator's refreshed copy when there is one, else the shipped one. */
export function cdnFilePath(options: EnrichmentOptions): string {
  if (options.cdnFilePath) return options.cdnFilePath;
  const refreshed = options.dataDir ? join(options.dataDir, CDN_FILE_NAME) : undefined;
  return refreshed && existsSync(refreshed) ? refreshed : SHIPPED_CDN_FILE;
}

// The ASN table and the city database are immutable files of 20-30 MB (the ASN table takes ~0.4 s to load);
// every app built in one process (tests build hundreds) shares one parsed copy, keyed by path.
const asnCache = new Map<string, Ipv4RangeIndex<AsnEntry>>();
const geoCache = new Map<string, ReturnType<typeof loadGeoReader>>();

function cached<V>(cache: Map<string, V>, key: string, load: (key: string) => V): V {
  let value = cache.get(key);
  if (value === undefined) {
    value = load(key);
    cache.set(key, value);
  }
  return value;
}

/** A value made on first use: a server that never asks pays neither the time nor the memory. */
function onFirstUse<V>(load: () => V): () => V {
  let value: V | undefined;
  return () => (value ??= load());
}

function countryFacts(code: string): { country: string; continentCode: string; continent: string; currency: string } {
  const facts = (countries as Record<string, (typeof countries)[TCountryCode] | undefined>)[code];
  if (!facts) return { country: '', continentCode: '', continent: '', currency: '' };
  return {
    country: facts.name,
    continentCode: facts.continent,
    continent: continents[facts.continent] ?? '',
    currency: facts.currency[0] ?? '',
  };
}

/**
 * The ASN table (~8 MB resident, ~0.4 s) and the city database (~6 MB held, its tree read from disk) are loaded on first use, not at
 * start: a server that is never asked about an address (an idle one, one whose reports carry
 * nothing new) neither waits for them nor keeps them resident. The CDN data file is small and is
 * read and checked here, so that a broken refreshed copy stops the start with its error.
 */
export function createEnrichment(options: EnrichmentOptions = {}): Enrichment {
  const asnTable = onFirstUse(() => cached(asnCache, options.asnCsvPath ?? defaultAsnCsvPath(), loadAsnIndex));
  const geoReader = onFirstUse(() => cached(geoCache, options.geoMmdbPath ?? defaultGeoMmdbPath(), loadGeoReader));
  const cdn = new CdnIndex(readCdnDataFile(cdnFilePath(options)));

  const asnOfNumber = (n: number): AsnEntry | null => asnTable().find(n) ?? null;
  const asnOf = (ip: string): AsnEntry | null => {
    const n = parseIpv4Address(ip);
    return n === undefined ? null : asnOfNumber(n);
  };
  const geoOf = (ip: string): GeoInfo | null => {
    if (parseIpv4Address(ip) === undefined) return null;
    const row: GeoRow | null = geoReader().get(ip);
    if (!row) return null;
    const facts = countryFacts(row.country_code);
    return {
      countryCode: row.country_code,
      ...facts,
      region: '',
      regionName: row.state1 ?? '',
      city: row.city ?? '',
      district: row.state2 ?? '',
      zip: row.postcode ?? '',
      lat: row.latitude,
      lon: row.longitude,
      timezone: row.timezone ?? '',
    };
  };
  return {
    asnOf,
    asnOfNumber,
    cdnOf: (ip) => cdn.cdnOf(ip),
    cdnOfNumber: (n) => cdn.cdnOfIpv4(n),
    isHosting: (ip) => {
      if (cdn.cdnOf(ip) !== null) return true;
      const entry = asnOf(ip);
      return entry !== null && cdn.hostingOperator(entry.asn) !== null;
    },
    geoOf,
    ipInfo: (ip) => {
      const a = asnOf(ip);
      const g = geoOf(ip);
      if (!a && !g) return null;
      return {
        as_domain: '',
        as_name: a?.name ?? '',
        asn: a ? `AS${a.asn}` : '',
        continent: g?.continentCode ?? '',
        continent_name: g?.continent ?? '',
        country: g?.countryCode ?? '',
        country_name: g?.country ?? '',
      };
    },
    cdnList: () => ({ date: cdn.date, records: cdn.list }),
  };
}
