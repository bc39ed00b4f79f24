import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, describe, expect, it } from 'vitest';
import { createEnrichment, cdnFilePath } from '../../src/services/enrichment/enrichment.ts';
import { defaultAsnCsvPath, loadAsnIndex } from '../../src/services/enrichment/asn.ts';
import { readCdnDataFile, SHIPPED_CDN_FILE } from '../../src/services/enrichment/cdn-data.ts';
import { Ipv4RangeIndex } from '../../src/services/enrichment/range-index.ts';

const enrichment = createEnrichment();
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('Ipv4RangeIndex', () => {
  it('lets the innermost nested range win and finds nothing in gaps', () => {
    const idx = Ipv4RangeIndex.fromNested([
      { start: 0, end: 100, value: 'outer' },
      { start: 10, end: 20, value: 'inner' },
      { start: 12, end: 13, value: 'core' },
      { start: 200, end: 210, value: 'apart' },
    ]);
    const at = (n: number) => idx.find(n);
    expect([0, 9, 10, 11, 12, 13, 14, 20, 21, 100, 101, 199, 200, 210, 211].map(at)).toEqual([
      'outer', 'outer', 'inner', 'inner', 'core', 'core', 'inner', 'inner', 'outer', 'outer', undefined, undefined, 'apart', 'apart', undefined,
    ]);
  });

  it('clips an overlapping row of a sorted table', () => {
    const idx = Ipv4RangeIndex.fromSorted(Uint32Array.of(0, 50, 60), Uint32Array.of(55, 70, 65), ['a', 'b', 'c']);
    expect([55, 56, 70, 71].map((n) => idx.find(n))).toEqual(['a', 'b', 'b', undefined]);
    expect(idx.size).toBe(2);
  });
});

describe('Enrichment (offline databases shipped by npm packages)', () => {
  it('names the AS of public addresses and none for private ones', () => {
    expect(enrichment.asnOf('1.1.1.1')).toEqual({ asn: 13335, name: 'Cloudflare, Inc.' });
    expect(enrichment.asnOf('8.8.8.8')).toEqual({ asn: 15169, name: 'Google LLC' });
    expect(enrichment.asnOf('81.2.69.160')).toEqual({ asn: 20712, name: 'Andrews & Arnold Ltd' });
    expect(enrichment.asnOf('10.0.0.1')).toBeNull();
    expect(enrichment.asnOf('not-an-ip')).toBeNull();
  });

  it('finds the CDN of IPv4 and IPv6 addresses from the shipped ranges', () => {
    expect(enrichment.cdnOf('104.16.1.1')).toBe('Cloudflare');
    expect(enrichment.cdnOf('151.101.1.69')).toBe('Fastly');
    expect(enrichment.cdnOf('13.32.0.1')).toBe('Amazon CloudFront');
    expect(enrichment.cdnOf('23.32.0.1')).toBe('Akamai');
    expect(enrichment.cdnOf('142.250.1.1')).toBe('Google');
    expect(enrichment.cdnOf('13.107.246.10')).toBe('Microsoft Azure Front Door');
    expect(enrichment.cdnOf('2606:4700::1111')).toBe('Cloudflare');
    expect(enrichment.cdnOf('::ffff:151.101.1.69')).toBe('Fastly');
    expect(enrichment.cdnOf('81.2.69.160')).toBeNull();
    expect(enrichment.cdnOf('2001:db8::1')).toBeNull();
  });

  it('marks cloud and CDN addresses as hosting', () => {
    expect(enrichment.isHosting('104.16.1.1')).toBe(true);
    // 3.5.140.2 is Amazon (AS16509), not a CloudFront edge: hosting by its AS.
    expect(enrichment.cdnOf('3.5.140.2')).toBeNull();
    expect(enrichment.asnOf('3.5.140.2')?.asn).toBe(16509);
    expect(enrichment.isHosting('3.5.140.2')).toBe(true);
    expect(enrichment.isHosting('81.2.69.160')).toBe(false);
  });

  it('locates addresses and fills ip_info', () => {
    expect(enrichment.geoOf('81.2.69.160')).toEqual({
      countryCode: 'GB', country: 'United Kingdom', continentCode: 'EU', continent: 'Europe', region: '', regionName: 'England',
      city: 'Bracknell', district: 'Bracknell Forest', zip: 'RG12', lat: 51.40359878540039, lon: -0.7617999911308289,
      timezone: 'Europe/London', currency: 'GBP',
    });
    expect(enrichment.geoOf('10.0.0.1')).toBeNull();
    expect(enrichment.ipInfo('8.8.8.8')).toEqual({
      as_domain: '', as_name: 'Google LLC', asn: 'AS15169', continent: 'NA', continent_name: 'North America', country: 'US', country_name: 'United States',
    });
    expect(enrichment.ipInfo('192.168.1.1')).toBeNull();
  });

  it('lists every provider of the dated data file, and prefers a refreshed copy in DATA_DIR', () => {
    const shipped = readCdnDataFile(SHIPPED_CDN_FILE);
    const { date, records } = enrichment.cdnList();
    expect(date).toBe(shipped.date);
    expect(records.map((r) => r.name)).toEqual([
      'Cloudflare', 'Fastly', 'Amazon CloudFront', 'Akamai', 'Google', 'Microsoft Azure Front Door', 'Imperva Incapsula', 'Sucuri',
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'rampart-cdn-'));
    dirs.push(dir);
    expect(cdnFilePath({ dataDir: dir })).toBe(SHIPPED_CDN_FILE);
    writeFileSync(join(dir, 'cdn-ranges.json'), JSON.stringify({ ...shipped, date: '2030-01-02', providers: [{ name: 'Only', source: 'test', refresh: [], addresses: ['192.0.2.0/24'] }] }));
    const refreshed = createEnrichment({ dataDir: dir });
    expect(refreshed.cdnList()).toEqual({ date: '2030-01-02', records: [{ name: 'Only', addresses: ['192.0.2.0/24'] }] });
    expect(refreshed.cdnOf('192.0.2.9')).toBe('Only');
    expect(refreshed.cdnOf('104.16.1.1')).toBeNull();
  });
});

describe('ASN table loaded in chunks into typed arrays', () => {
  /** The table as a plain CSV reader sees it, indexed the simple way (one value per range). */
  function reference(path: string): { index: Ipv4RangeIndex<{ asn: number; name: string }>; rows: string[][] } {
    const rows = parse(readFileSync(path), { relaxColumnCount: true }) as string[][];
    const index = Ipv4RangeIndex.fromSorted(
      Uint32Array.from(rows, (r) => Number(r[0])),
      Uint32Array.from(rows, (r) => Number(r[1])),
      rows.map((r) => ({ asn: Number(r[2]), name: r[3] ?? '' })),
    );
    return { index, rows };
  }

  it('answers as a CSV parser of the whole shipped file does, at every range edge (lines cross 1 MB chunks)', () => {
    const path = defaultAsnCsvPath();
    const loaded = loadAsnIndex(path);
    const { index, rows } = reference(path);
    expect(loaded.size).toBe(index.size);
    expect(rows.length).toBeGreaterThan(400_000);
    let compared = 0;
    const mismatches: string[] = [];
    for (const r of rows) {
      for (const n of [Number(r[0]), Number(r[1]), Number(r[1]) + 1]) {
        const a = loaded.find(n);
        const b = index.find(n);
        compared++;
        if (a?.asn !== b?.asn || a?.name !== b?.name) mismatches.push(`${n}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
      }
    }
    expect(compared).toBe(rows.length * 3);
    expect(mismatches.slice(0, 5)).toEqual([]);
    // ~1.2M look-ups on each side after two parses of a 21 MB file: a minute under coverage on a
    // loaded 2-core machine (it ran 64 s in CI).
  }, 240_000);

  it('reads quoted names, CRLF lines, an overlapping row and a last line without newline', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rampart-asn-'));
    dirs.push(dir);
    const file = join(dir, 'asn.csv');
    writeFileSync(file, '10,20,1,"Comma, Inc."\r\n15,30,2,"Say ""hi"""\r\n40,50,1,"Comma, Inc."\n60,70,3,');
    const idx = loadAsnIndex(file);
    expect([10, 20, 21, 30, 31, 45, 60, 70, 71].map((n) => idx.find(n))).toEqual([
      { asn: 1, name: 'Comma, Inc.' }, { asn: 1, name: 'Comma, Inc.' }, { asn: 2, name: 'Say "hi"' }, { asn: 2, name: 'Say "hi"' },
      undefined, { asn: 1, name: 'Comma, Inc.' }, { asn: 3, name: '' }, { asn: 3, name: '' }, undefined,
    ]);
    // Both ranges of AS 1 answer the same AS (kept once, as columns: services/enrichment/asn.ts).
    expect(idx.find(10)).toEqual(idx.find(45));
  });
});

describe('Enrichment loads its tables on first use', () => {
  it('starts without reading the ASN table or the city database, and reads each when first asked', () => {
    const missing = join(tmpdir(), 'rampart-no-such-dir', 'absent');
    const lazy = createEnrichment({ asnCsvPath: `${missing}.csv`, geoMmdbPath: `${missing}.mmdb` });
    // The CDN part is read at creation and answers at once.
    expect(lazy.cdnOf('104.16.1.1')).toBe('Cloudflare');
    expect(() => lazy.asnOf('8.8.8.8')).toThrow(/ENOENT/);
    expect(() => lazy.geoOf('8.8.8.8')).toThrow(/ENOENT/);
    // Addresses that need no table are answered without one.
    expect(lazy.asnOf('not-an-ip')).toBeNull();
  });

  it('answers the same as the tables loaded directly', () => {
    const fresh = createEnrichment();
    const table = loadAsnIndex(defaultAsnCsvPath());
    for (const ip of ['1.1.1.1', '8.8.8.8', '81.2.69.160', '3.5.140.2', '10.0.0.1', '223.255.255.1']) {
      const n = ip.split('.').reduce((a, b) => a * 256 + Number(b), 0);
      expect(fresh.asnOf(ip)).toEqual(table.find(n) ?? null);
    }
    expect(fresh.geoOf('81.2.69.160')?.city).toBe('Bracknell');
  });
});
