import { z } from 'zod';
import { FeedPageSize, FeedTs, ScoreListParams, TagFilter } from './feed-query.ts';
import {
  AnyDigest,
  Confidence,
  DecisionReason,
  DecisionInput,
  ExplainFlag,
  ListFormat,
  Md5Hex,
  PageCursor,
  Sha1Hex,
  Sha256Hex,
  Tag,
  YesNoUpper,
} from './primitives.ts';

export const DigestParams = z.object({ digest: AnyDigest });
export type DigestParams = z.infer<typeof DigestParams>;

export const FileLookupQuery = z.object({
  deep_scan: YesNoUpper.default('NO').describe('YES also searches the larger secondary store'),
  explain: ExplainFlag,
});
export type FileLookupQuery = z.infer<typeof FileLookupQuery>;

/** Specified as a string ("0", "1", "-1"); numbers are accepted too and both parse to a number. */
export const FileDecisionBody = z.object({ decision: DecisionInput, reason: DecisionReason.optional() });
export type FileDecisionBody = z.infer<typeof FileDecisionBody>;

export const FilesScoreParams = ScoreListParams;
export type FilesScoreParams = z.infer<typeof FilesScoreParams>;

export const FilesScoreQuery = z.object({
  digest: z.enum(['SHA256', 'SHA1', 'MD5']).describe('Which digest to list'),
  format: ListFormat.default('CSV').describe('CSV: one digest per line; LIST: digests separated by commas'),
  page: PageCursor.optional(),
});
export type FilesScoreQuery = z.infer<typeof FilesScoreQuery>;

export const FilesFeedQuery = z.object({
  ts: FeedTs,
  page_size: FeedPageSize,
  min_score: z.coerce.number().gt(0).lt(1000).default(1).describe('Minimum score; bounds 0 and 1000 exclusive'),
  file_type: z.string().min(1).max(255).optional().describe('Only files of this MIME type'),
  file_name: z.string().min(1).max(1024).optional().describe('Only files of this name'),
  tags: TagFilter.optional(),
});
export type FilesFeedQuery = z.infer<typeof FilesFeedQuery>;

/** 64 KiB in base64: the part of a sample the service keeps. */
const MAX_FILE_BYTES_BASE64 = Math.ceil((64 * 1024) / 3) * 4;

export const FileReportBody = z
  .object({
    confidence: Confidence.prefault(1),
    file_type: z.string().min(1).max(255).describe('MIME type; must be one of GET /file_types'),
    tags: z.array(Tag).max(100).optional(),
    file_bytes: z.base64().max(MAX_FILE_BYTES_BASE64).optional().describe('Base64 of at most the first 64 KiB of the sample'),
    file_name: z.string().min(1).max(1024).optional(),
    md5: Md5Hex.optional(),
    sha1: Sha1Hex.optional(),
    sha256: Sha256Hex.optional(),
  })
  .refine((body) => body.md5 !== undefined || body.sha1 !== undefined || body.sha256 !== undefined, {
    message: 'at least one of md5, sha1, sha256 is required',
    path: ['sha256'],
  })
  .meta({ description: 'Report of a malicious file; give at least one digest' });
export type FileReportBody = z.infer<typeof FileReportBody>;
