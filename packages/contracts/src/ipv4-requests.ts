import { z } from 'zod';
import {
  Confidence,
  DecisionReason,
  DecisionInput,
  ExplainFlag,
  Ipv4Address,
  Ipv4OrNetwork,
  ListFormat,
  PageCursor,
  YesNo,
  YesNoUpper,
  numberLike,
} from './primitives.ts';

export const FlatParams = z.object({
  min_score: z.coerce.number().gt(1).lt(1000).describe('Minimum live score; bounds 1 and 1000 exclusive'),
});
export type FlatParams = z.infer<typeof FlatParams>;

export const FlatQuery = z.object({
  list: YesNoUpper.default('NO').describe('NO: CSV with a header row; YES: addresses separated by commas'),
});
export type FlatQuery = z.infer<typeof FlatQuery>;

export const Ipv4ListParams = z.object({
  min_score: z.coerce.number().gt(0).lt(1001).describe('Minimum live score; bounds 0 and 1001 exclusive'),
});
export type Ipv4ListParams = z.infer<typeof Ipv4ListParams>;

export const Ipv4ListQuery = z.object({
  format: ListFormat.default('CSV').describe('CSV: one address per line; LIST: addresses separated by commas'),
  agid: z.string().min(1).max(256).optional().describe('Agent identifier of the caller'),
  gaid: z.string().min(1).max(256).optional().describe("An agent of the caller's organization polling with a member key: counts as its check-in (via feed); unknown agents are ignored"),
  plugin: z.string().min(1).max(128).optional().describe('Plugin name of the caller'),
  page: PageCursor.optional(),
});
export type Ipv4ListQuery = z.infer<typeof Ipv4ListQuery>;

export const IpsFeedQuery = z.object({
  page_size: z.coerce.number().int().gt(0).lt(1001).default(50).describe('Records per page; bounds 0 and 1001 exclusive'),
  ts: z.coerce.number().int().gt(-1).default(0).describe('Return records with ts strictly greater than this'),
  full: YesNo.default('no').describe('no omits ip_info, info, elk_ts and elk_entry_ts'),
  gaid: z.string().min(1).max(256).optional().describe("An agent of the caller's organization polling with a member key: counts as its check-in (via feed); unknown agents are ignored"),
});
export type IpsFeedQuery = z.infer<typeof IpsFeedQuery>;

export const IpParams = z.object({ ipv4: Ipv4Address });
export type IpParams = z.infer<typeof IpParams>;

export const IpLookupQuery = z.object({
  full: YesNo.default('no').describe('no omits ip_info, info, elk_ts and elk_entry_ts'),
  explain: ExplainFlag,
});
export type IpLookupQuery = z.infer<typeof IpLookupQuery>;

/** The original agent adds `?gaid=` to its reports. */
export const IpsReportQuery = z.object({
  gaid: z.string().min(1).max(256).optional().describe('Agent identifier of the reporter'),
});
export type IpsReportQuery = z.infer<typeof IpsReportQuery>;

/** Not strict: clients send extra fields (the original agent sends `lid`); they are dropped. */
export const IpsReportBody = z
  .object({
    ip: Ipv4OrNetwork,
    confidence: Confidence,
    source: z.string().min(1).max(256).describe('Where the actor was identified'),
    notes: z.string().max(4096).optional(),
    decision: DecisionInput.prefault(-1),
    ttl: numberLike(z.int().positive())
      .optional()
      .describe('Epoch seconds until which the decision holds; must lie in the future'),
  })
  .meta({ description: 'Report of a suspicious IPv4 address or network' });
export type IpsReportBody = z.infer<typeof IpsReportBody>;

/**
 * Beyond the specification: `PUT /ips/{ip}` sets only the caller's decision on an address or
 * (URL-encoded) network, as `PUT /files|domains|urls/{id}` do, without counting a report
 * (`POST /ips` with `decision` also reports, and its confidence replaces the previous one).
 */
export const IpDecisionParams = z.object({ ip: Ipv4OrNetwork });
export const IpDecisionBody = z.strictObject({
  decision: DecisionInput.describe('-1 follow the score, 0 whitelist, 1 blacklist (until ttl)'),
  ttl: numberLike(z.int().positive()).optional().describe('Epoch seconds until which a blacklisting holds; only with decision 1'),
  reason: DecisionReason.optional(),
});
