import { z } from 'zod';

/** The formats `POST /import` reads. */
export const IMPORT_FORMATS = ['csv', 'stix21', 'misp'] as const;
export const ImportFormat = z.enum(IMPORT_FORMATS);
export type ImportFormat = z.infer<typeof ImportFormat>;

/** Why an import row is not reported. */
export const IMPORT_REFUSALS = ['malformed', 'unsupported_type', 'not_for_detection', 'non_public_address', 'network_too_wide', 'reserved_ip'] as const;

export const ImportBody = z
  .object({
    format: ImportFormat.describe('csv (header value,kind,confidence,source), stix21 (a STIX 2.1 bundle) or misp (a MISP event JSON)'),
    content: z.string().min(1).describe('The file, as text'),
    dry_run: z.boolean().default(false).describe('true: answer the preview only, report nothing'),
    source: z.string().min(1).max(256).optional().describe('Source of every row (a CSV row naming its own keeps it); default import:<format>'),
  })
  .meta({ description: 'A bulk import of indicators' });
export type ImportBody = z.infer<typeof ImportBody>;

export const ImportRow = z.object({
  row: z.int().describe('1-based position of the row in the file (CSV: data line; STIX: indicator; MISP: attribute)'),
  kind: z.enum(['ipv4', 'domain', 'url', 'file']).nullable(),
  value: z.string().describe('The value as the file gave it'),
  canonical: z.string().nullable().describe('The value as it is (or would be) reported'),
  confidence: z.number().nullable(),
  status: z.enum(['accepted', 'imported', 'duplicate', 'refused']).describe('accepted: would be reported (dry run); duplicate: an earlier import of this content reported it'),
  reason: z.object({ code: z.enum(IMPORT_REFUSALS), message: z.string() }).optional(),
});
export type ImportRow = z.infer<typeof ImportRow>;

export const ImportResponse = z
  .object({
    dry_run: z.boolean(),
    format: ImportFormat,
    content_sha256: z.string(),
    counts: z.object({ rows: z.int(), accepted: z.int(), imported: z.int(), duplicate: z.int(), refused: z.int() }),
    rows: z.array(ImportRow),
  })
  .meta({ description: 'What an import reports (or would), row by row, with counts' });
export type ImportResponse = z.infer<typeof ImportResponse>;
