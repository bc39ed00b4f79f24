import type { AsnEntry } from '../enrichment/enrichment.ts';
import { csvField } from '../text-list.ts';

/**
 * The `/flat` CSV columns (spec 4.2), written one way whether a line comes from SQL rows
 * (services/ipv4/lists.ts) or from the mirror's columns (services/ipv4/mirror/): the AS and CDN
 * fields are composed here, and the mirror interns exactly these texts.
 */
export const FLAT_CSV_HEADER = 'IPv4,LiveScore,Members,Reports,LastUpdate,AS,ASN,CDN,Reverse,IS_CDN';

/**
 * The AS name and ASN of a line: the record's ip_info facts, each missing one taken from the
 * offline data (`offline` is called only then, at most once).
 */
export function asFacts(ipName: string, ipAsn: string, offline: () => AsnEntry | null): { name: string; asn: string } {
  if (ipName && ipAsn) return { name: ipName, asn: ipAsn };
  const entry = offline();
  if (!entry) return { name: ipName, asn: ipAsn };
  return { name: ipName || entry.name, asn: ipAsn || `AS${entry.asn}` };
}

/** The `AS,ASN` fields. */
export function asCsv(name: string, asn: string): string {
  return `${csvField(name)},${asn}`;
}

/** The `CDN,Reverse,IS_CDN` fields of the CDN holding the network's first address (null: none). */
export function cdnCsv(cdn: string | null): string {
  return cdn ? `${csvField(cdn)},,true` : ',,false';
}
