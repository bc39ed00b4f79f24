import ipaddr from 'ipaddr.js';
import type { IpMetadata } from '@rampart/contracts';
import type { Enrichment } from './enrichment.ts';

const EMPTY: Omit<IpMetadata, 'status' | 'query'> = {
  continent: '', continentCode: '', country: '', countryCode: '', region: '', regionName: '', city: '', district: '', zip: '',
  lat: 0, lon: 0, timezone: '', offset: 0, currency: '', isp: '', org: '', as: '', asname: '', reverse: '', mobile: false, proxy: false, hosting: false,
};

// ipaddr.js range names of addresses that route nowhere public; 'unicast' is the public rest.
const PRIVATE_RANGES = new Set(['private', 'loopback', 'linkLocal', 'carrierGradeNat']);

/** Why an IPv4 address has no public metadata ('private range' / 'reserved range'), or null. */
export function nonPublicReason(ip: string): string | null {
  const range = ipaddr.IPv4.parse(ip).range();
  if (range === 'unicast') return null;
  return PRIVATE_RANGES.has(range) ? 'private range' : 'reserved range';
}

/** UTC offset in seconds of an IANA time zone at `at` (daylight saving included). */
export function utcOffsetSeconds(timeZone: string, at: Date): number {
  let name: string | undefined;
  try {
    name = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' }).formatToParts(at).find((p) => p.type === 'timeZoneName')?.value;
  } catch {
    return 0;
  }
  const m = /^GMT([+-])(\d{2}):(\d{2})$/.exec(name ?? '');
  if (!m) return 0;
  return (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 3600 + Number(m[3]) * 60);
}

/**
 * The record of spec 2.8 for a public IPv4 address; private and reserved ones answer
 * `status: "fail"` with a `message`, as the original service did. `reverse` is looked up by the caller.
 */
export function ipMetadata(enrichment: Enrichment, ip: string, reverse: string, at: Date): IpMetadata {
  const reason = nonPublicReason(ip);
  if (reason) return { status: 'fail', message: reason, ...EMPTY, query: ip };
  const geo = enrichment.geoOf(ip);
  const as = enrichment.asnOf(ip);
  return {
    status: 'success',
    ...EMPTY,
    ...(geo && {
      continent: geo.continent,
      continentCode: geo.continentCode,
      country: geo.country,
      countryCode: geo.countryCode,
      region: geo.region,
      regionName: geo.regionName,
      city: geo.city,
      district: geo.district,
      zip: geo.zip,
      lat: geo.lat,
      lon: geo.lon,
      timezone: geo.timezone,
      offset: geo.timezone ? utcOffsetSeconds(geo.timezone, at) : 0,
      currency: geo.currency,
    }),
    ...(as && { isp: as.name, org: as.name, as: `AS${as.asn} ${as.name}`, asname: as.name }),
    reverse,
    hosting: enrichment.isHosting(ip),
    query: ip,
  };
}
