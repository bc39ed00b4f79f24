import { readFileSync } from 'node:fs';
import { serverPath } from '../../paths.ts';
import { z } from 'zod';
import { CdnRecord } from '@rampart/contracts';

/** Where `rampart cdn refresh` fetches one provider's published list, and how to read it. */
export const CdnRefreshSource = z.object({
  url: z.string().min(1).describe('http(s) URL, or env:NAME for a URL given in that variable'),
  format: z.enum(['lines', 'fastly', 'aws', 'google', 'azure']),
  service: z.string().optional().describe('aws: the service name; azure: the service tag prefix'),
});
export type CdnRefreshSource = z.infer<typeof CdnRefreshSource>;

export const CdnProvider = CdnRecord.extend({
  source: z.string().min(1),
  refresh: z.array(CdnRefreshSource),
});
export type CdnProvider = z.infer<typeof CdnProvider>;

/** The dated CDN data file: shipped in resources/, refreshed copies in DATA_DIR. */
export const CdnDataFile = z.object({
  date: z.iso.date(),
  note: z.string(),
  providers: z.array(CdnProvider).min(1),
  hosting_asns: z.object({
    source: z.string(),
    asns: z.record(z.string().regex(/^\d+$/), z.string()),
  }),
});
export type CdnDataFile = z.infer<typeof CdnDataFile>;

export const SHIPPED_CDN_FILE = serverPath('resources', 'cdn-ranges.json');

export function readCdnDataFile(path: string): CdnDataFile {
  return CdnDataFile.parse(JSON.parse(readFileSync(path, 'utf8')));
}
