import { z } from 'zod';
import { ReportTags } from './domain-requests.ts';
import { FeedPageSize, FeedTs, ScoreListParams } from './feed-query.ts';
import { Confidence, ExplainFlag, IndicatorUrl, ListFormat, PageCursor } from './primitives.ts';

export const UrlParams = z.object({ url: IndicatorUrl.describe('The URL, URL-encoded in the path') });
export type UrlParams = z.infer<typeof UrlParams>;

export const UrlLookupQuery = z.object({ explain: ExplainFlag });
export type UrlLookupQuery = z.infer<typeof UrlLookupQuery>;

export const UrlsScoreParams = ScoreListParams;
export type UrlsScoreParams = z.infer<typeof UrlsScoreParams>;

export const UrlsScoreQuery = z.object({
  format: ListFormat.default('CSV').describe('CSV: one URL per line; LIST: URLs separated by commas'),
  page: PageCursor.optional(),
});
export type UrlsScoreQuery = z.infer<typeof UrlsScoreQuery>;

export const UrlsFeedQuery = z.object({ ts: FeedTs, page_size: FeedPageSize });
export type UrlsFeedQuery = z.infer<typeof UrlsFeedQuery>;

/** The specification also lists `file_type` as required here; it is not enforced (stripped like any extra field). */
export const UrlReportBody = z
  .object({ confidence: Confidence.prefault(1), url: IndicatorUrl, tags: ReportTags.optional() })
  .meta({ description: 'Report of a malicious URL' });
export type UrlReportBody = z.infer<typeof UrlReportBody>;
