import { z } from 'zod';
import { EpochSeconds } from './primitives.ts';
import { DomainRecord, FileRecord, Ipv4Record, UrlRecord } from './records.ts';
import { FeedUser, User } from './user.ts';

export const Ipv4PageHeader = z.object({
  type: z.literal('IPv4'),
  version: z.literal(2),
  ts: z.string().regex(/^\d+$/).describe('Request window timestamp: epoch seconds written as a string (IPv4 feed only)'),
  next_ts: EpochSeconds.optional().describe('ts of the last record in the page, or the requested ts when the page is empty'),
  page_size: z.int().min(0),
  delay: z.int().min(0).describe('Seconds by which the caller organization sees new indicators late'),
  eval: z.string().describe('JavaScript function body over (scoreTimeZero, current_time) returning the live score'),
  exec_python: z.string().describe('The same formula as a Python expression'),
  user: User,
});
export type Ipv4PageHeader = z.infer<typeof Ipv4PageHeader>;

export const Ipv4Page = z
  .object({ header: Ipv4PageHeader, body: z.array(Ipv4Record) })
  .meta({ description: 'IPv4 feed page: records with ts strictly greater than the requested ts, ordered by (ts, id)' });
export type Ipv4Page = z.infer<typeof Ipv4Page>;

function feedHeader<const T extends string>(type: T) {
  return z.object({
    type: z.literal(type),
    version: z.literal(4),
    ts: EpochSeconds.describe('Request window timestamp'),
    next_ts: EpochSeconds.describe('Value to send as ts in the next call'),
    page_size: z.int().min(0),
    user: FeedUser,
  });
}

export const FilePageHeader = feedHeader('Malware');
export type FilePageHeader = z.infer<typeof FilePageHeader>;
export const DomainPageHeader = feedHeader('Domain');
export type DomainPageHeader = z.infer<typeof DomainPageHeader>;
export const UrlPageHeader = feedHeader('URL');
export type UrlPageHeader = z.infer<typeof UrlPageHeader>;

export const FilePage = z.object({ header: FilePageHeader, body: z.array(FileRecord) }).meta({ description: 'File feed page' });
export type FilePage = z.infer<typeof FilePage>;
export const DomainPage = z.object({ header: DomainPageHeader, body: z.array(DomainRecord) }).meta({ description: 'Domain feed page' });
export type DomainPage = z.infer<typeof DomainPage>;
export const UrlPage = z.object({ header: UrlPageHeader, body: z.array(UrlRecord) }).meta({ description: 'URL feed page' });
export type UrlPage = z.infer<typeof UrlPage>;
