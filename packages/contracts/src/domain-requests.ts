import { z } from 'zod';
import { FeedPageSize, FeedTs, ScoreListParams } from './feed-query.ts';
import { Confidence, DecisionInput, DecisionReason, DomainName, ExplainFlag, ListFormat, PageCursor, Tag, uniqueArray } from './primitives.ts';

export const DomainParams = z.object({ domain_name: DomainName });
export type DomainParams = z.infer<typeof DomainParams>;

export const DomainLookupQuery = z.object({ explain: ExplainFlag });
export type DomainLookupQuery = z.infer<typeof DomainLookupQuery>;

/** Body of PUT /domains/{domain_name} and PUT /urls/{url}. */
export const DecisionBody = z.object({ decision: DecisionInput, reason: DecisionReason.optional() });
export type DecisionBody = z.infer<typeof DecisionBody>;

export const DomainsScoreParams = ScoreListParams;
export type DomainsScoreParams = z.infer<typeof DomainsScoreParams>;

export const DomainsScoreQuery = z.object({
  protocol: z.enum(['HTTP', 'HTTPS']),
  format: ListFormat.default('CSV').describe('CSV: one domain per line; LIST: domains separated by commas'),
  page: PageCursor.optional(),
});
export type DomainsScoreQuery = z.infer<typeof DomainsScoreQuery>;

export const DomainsFeedQuery = z.object({ ts: FeedTs, page_size: FeedPageSize });
export type DomainsFeedQuery = z.infer<typeof DomainsFeedQuery>;

/** Tags of a domain or URL report: unique, 1 to 10. */
export const ReportTags = uniqueArray(Tag, 1, 10);

/** The specification also lists `file_type` as required here; it is not enforced (stripped like any extra field). */
export const DomainReportBody = z
  .object({ confidence: Confidence.prefault(1), domain: DomainName, tags: ReportTags.optional() })
  .meta({ description: 'Report of a malicious domain' });
export type DomainReportBody = z.infer<typeof DomainReportBody>;
