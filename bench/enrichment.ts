/*
 * The enrichment indexes /flat and ip_info call per row, against the obvious baselines, in one run:
 *   cdnOf:  binary search over flattened CIDR ranges  vs  ipaddr.js match() over every CDN CIDR;
 *   asnOf:  binary search over the ~410k-row ASN table vs  linear scan of the same typed arrays;
 *   load:   time and RSS to build the ASN index, the GeoLite2 reader and the CDN index.
 * Writes bench/results/enrichment.md. Run: npx tsx bench/enrichment.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ipaddr from 'ipaddr.js';
import { createEnrichment } from '../apps/server/src/services/enrichment/enrichment.ts';
import { defaultAsnCsvPath, loadAsnIndex } from '../apps/server/src/services/enrichment/asn.ts';
import { readCdnDataFile, SHIPPED_CDN_FILE } from '../apps/server/src/services/enrichment/cdn-data.ts';
import { formatIpv4 as numberToIpv4, parseIpv4Address } from '@rampart/contracts';

const rss = () => process.memoryUsage().rss / 1e6;
const rssBefore = rss();
let t = performance.now();
const enrichment = createEnrichment();
// The tables load on first use: ask each once so that the load figure holds all three.
enrichment.asnOf('8.8.8.8');
enrichment.geoOf('8.8.8.8');
const loadMs = performance.now() - t;
const rssAfter = rss();

// Deterministic pseudo-random public-looking addresses (xorshift), no Math.random.
let seed = 0x9e3779b9;
const next = () => ((seed ^= seed << 13), (seed ^= seed >>> 17), (seed ^= seed << 5), seed >>> 0);
const ips = Array.from({ length: 200_000 }, () => numberToIpv4(next()));

function rate(label: string, n: number, fn: (ip: string) => unknown): number {
  let sink = 0;
  const start = performance.now();
  for (let i = 0; i < n; i++) if (fn(ips[i % ips.length]!) != null) sink++;
  const perSec = n / ((performance.now() - start) / 1000);
  console.log(`${label}: ${Math.round(perSec).toLocaleString('en')} look-ups/s (${sink} hits)`);
  return perSec;
}

const cidrs = readCdnDataFile(SHIPPED_CDN_FILE).providers.flatMap((p) =>
  p.addresses.filter((a) => a.includes('.')).map((a) => ({ range: ipaddr.parseCIDR(a.includes('/') ? a : `${a}/32`), name: p.name })),
);
const naiveCdn = (ip: string) => {
  const addr = ipaddr.parse(ip);
  return cidrs.find((c) => addr.kind() === c.range[0].kind() && addr.match(c.range))?.name ?? null;
};
const cdnIndex = rate('cdnOf (index)', 1_000_000, enrichment.cdnOf);
const cdnNaive = rate('cdnOf baseline (ipaddr.js match over every CIDR)', 100_000, naiveCdn);

const table = loadAsnIndex(defaultAsnCsvPath()) as unknown as { starts: Uint32Array; ends: Uint32Array; ids: Uint32Array; table: unknown[] };
const linearAsn = (ip: string) => {
  const n = parseIpv4Address(ip)!;
  for (let i = 0; i < table.starts.length; i++) if (table.starts[i]! <= n && n <= table.ends[i]!) return table.table[table.ids[i]!];
  return null;
};
const asnIndex = rate('asnOf (index)', 1_000_000, enrichment.asnOf);
const asnLinear = rate('asnOf baseline (linear scan)', 2_000, linearAsn);
t = performance.now();
const geo = rate('geoOf (maxmind reader)', 200_000, enrichment.geoOf);

const lines = [
  '# Enrichment look-ups (bench/enrichment.ts)',
  '',
  `Node ${process.version}, ${new Date().toISOString().slice(0, 10)}. Baselines measured in the same run.`,
  '',
  '| measure | value |',
  '|---|---|',
  `| load (ASN index + GeoLite2 reader + CDN index) | ${Math.round(loadMs)} ms, +${Math.round(rssAfter - rssBefore)} MB RSS |`,
  `| cdnOf, index | ${Math.round(cdnIndex).toLocaleString('en')} /s |`,
  `| cdnOf, ipaddr.js match over ${cidrs.length} CIDRs | ${Math.round(cdnNaive).toLocaleString('en')} /s (index ${(cdnIndex / cdnNaive).toFixed(0)}× faster) |`,
  `| asnOf, index | ${Math.round(asnIndex).toLocaleString('en')} /s |`,
  `| asnOf, linear scan | ${Math.round(asnLinear).toLocaleString('en')} /s (index ${(asnIndex / asnLinear).toFixed(0)}× faster) |`,
  `| geoOf (maxmind) | ${Math.round(geo).toLocaleString('en')} /s |`,
  '',
];
const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'enrichment.md');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, lines.join('\n'));
console.log(lines.join('\n'));
