import { readFileSync } from 'node:fs';
import { Reader } from 'maxmind';
import { describe, expect, it } from 'vitest';
import { formatIpv4 } from '@rampart/contracts';
import { defaultAsnCsvPath, loadAsnIndex } from '../src/services/enrichment/asn.ts';
import { defaultGeoMmdbPath, loadGeoReader } from '../src/services/enrichment/geo.ts';
import { createEnrichment } from '../src/services/enrichment/enrichment.ts';
import { ipMetadata } from '../src/services/enrichment/ip-metadata.ts';
import { loadAsnIndexAsObjects } from './support/asn-objects.ts';

/**
 * The enrichment tables as compact columns read from their files (the ASN table's ASes as
 * columns, the city database's search tree left on disk) answer exactly as the loaders they
 * replaced (one object per AS; maxmind's Reader over the whole file), on the real data files.
 */
const SPREAD = 120_000;
/** Addresses spread over all of IPv4 (a multiplicative hash of 0..n), plus edges and well-known ones. */
const addresses = (): number[] => {
  const out = Array.from({ length: SPREAD }, (_, i) => Math.imul(i, 2_654_435_761) >>> 0);
  for (const ip of ['0.0.0.0', '0.0.0.1', '1.0.0.0', '1.1.1.1', '8.8.8.8', '10.0.0.1', '81.2.69.160', '104.16.0.1', '127.0.0.1', '192.168.1.1', '223.255.255.255', '224.0.0.1', '255.255.255.255']) {
    const [a, b, c, d] = ip.split('.').map(Number);
    out.push(((a! << 24) | (b! << 16) | (c! << 8) | d!) >>> 0);
  }
  return out;
};

describe('compact enrichment tables', () => {
  it('the ASN table as columns answers as the table of objects did, address for address', () => {
    const path = defaultAsnCsvPath();
    const objects = loadAsnIndexAsObjects(path);
    const columns = loadAsnIndex(path);
    expect(columns.size).toBe(objects.size);
    let found = 0;
    for (const ip of addresses()) {
      const want = objects.find(ip);
      expect(columns.find(ip), formatIpv4(ip)).toEqual(want);
      if (want) found++;
    }
    // Most of the address space is announced: the comparison covers real entries, not only misses.
    expect(found).toBeGreaterThan(SPREAD / 2);
  });

  it('the city database walked from disk answers as maxmind read from memory, address for address', () => {
    const path = defaultGeoMmdbPath();
    const whole = new Reader(readFileSync(path));
    const fromDisk = loadGeoReader(path);
    let found = 0;
    for (const n of addresses()) {
      const ip = formatIpv4(n);
      const want = whole.get(ip);
      expect(fromDisk.get(ip), ip).toEqual(want);
      if (want) found++;
    }
    expect(found).toBeGreaterThan(SPREAD / 2);
    expect(fromDisk.get('not an address')).toBeNull();
  });

  it('ip metadata and ip_info are unchanged for a sample of addresses', () => {
    const enrichment = createEnrichment();
    const at = new Date('2026-01-15T12:00:00Z');
    const sample = addresses().filter((_, i) => i % 40 === 0);
    const objects = loadAsnIndexAsObjects(defaultAsnCsvPath());
    const whole = new Reader(readFileSync(defaultGeoMmdbPath()));
    for (const n of sample) {
      const ip = formatIpv4(n);
      const meta = ipMetadata(enrichment, ip, '', at);
      const as = objects.find(n);
      const geo = whole.get(ip) as { country_code?: string; city?: string; latitude?: number; longitude?: number } | null;
      if (meta.status === 'success') {
        expect(meta.as, ip).toBe(as ? `AS${as.asn} ${as.name}` : '');
        expect([meta.countryCode, meta.city, meta.lat, meta.lon], ip).toEqual(geo ? [geo.country_code, geo.city ?? '', geo.latitude, geo.longitude] : ['', '', 0, 0]);
      }
      expect(enrichment.ipInfo(ip)?.asn ?? '', ip).toBe(as ? `AS${as.asn}` : '');
    }
  });
});
