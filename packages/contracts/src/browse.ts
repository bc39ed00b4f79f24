import { z } from 'zod';
import { OrgId, PageCursor } from './primitives.ts';

/*
 * Beyond the specification: the organization's decisions and the indicators it sees, browsable
 * (`GET /decisions`, `GET /indicators`) for the web console and the CLI. Pages are chained with
 * the same signed cursors as the plain-text lists: `next_page` of one answer is `page` of the
 * next call with the same filters (other filters with it are a 400 naming `querystring.page`).
 */

export const INDICATOR_KINDS = ['ipv4', 'domain', 'url', 'file'] as const;
export const IndicatorKindName = z.enum(INDICATOR_KINDS).describe('ipv4 (addresses and networks), domain, url or file (digests)');
export type IndicatorKindName = z.infer<typeof IndicatorKindName>;

/** Most rows one browse page may carry. */
export const BROWSE_MAX_PAGE_SIZE = 500;

const BrowsePageSize = z.coerce
  .number()
  .int()
  .min(1)
  .max(BROWSE_MAX_PAGE_SIZE)
  .default(50)
  .describe(`Rows per page, 1 to ${BROWSE_MAX_PAGE_SIZE} (default 50)`);

const SearchText = z.string().trim().min(1).max(200).describe('Case-insensitive text the value must contain');

export const DecisionListQuery = z
  .strictObject({
    kind: IndicatorKindName.optional().describe('Only decisions on this kind of indicator (default: every kind)'),
    decision: z.enum(['0', '1']).optional().describe('0: whitelists only, 1: blocks only'),
    q: SearchText.optional(),
    page_size: BrowsePageSize,
    page: PageCursor.optional(),
  })
  .meta({ description: "Filters over the caller's organization's decisions" });
export type DecisionListQuery = z.infer<typeof DecisionListQuery>;

export const DecisionItem = z
  .object({
    kind: IndicatorKindName,
    value: z.string().describe('Address or CIDR network, domain, URL, or digest in upper-case hex'),
    decision: z.literal([0, 1]).describe('0 whitelist, 1 block'),
    ttl: z.int().nullable().describe('Epoch seconds until which a block holds (IPv4 only); null: no end'),
    expired: z.boolean().describe('A block whose ttl has passed: it no longer applies'),
    updated_at: z.string().describe('ISO 8601, when the decision was last set'),
    held: z.boolean().describe('Whether an indicator with this value is held (somebody reported it)'),
    score: z.int().nullable().describe('Score at the anchor of the held indicator as this organization sees it; null when not held'),
    live_score: z.number().nullable().describe('Live (decayed) score now; null when not held'),
    reason: z.string().nullable().describe('Why, as given with the last change; null when none was given'),
    set_by: z.string().nullable().describe('Who made the last change: a username, `agent:<gaid>` or `cli:<account>`; null for decisions set before this was kept'),
  })
  .meta({ description: 'One decision of the organization' });
export type DecisionItem = z.infer<typeof DecisionItem>;

export const DecisionListResponse = z
  .object({
    items: z.array(DecisionItem),
    next_page: z.string().nullable().describe('Cursor of the next page (send as `page` with the same filters); null on the last page'),
  })
  .meta({ description: "A page of the organization's decisions, most recently set first" });
export type DecisionListResponse = z.infer<typeof DecisionListResponse>;

export const SCORE_BANDS = ['low', 'medium', 'high', 'critical'] as const;

const LiveScoreBound = z.coerce.number().int().min(0).max(1000);

export const IndicatorListQuery = z
  .strictObject({
    kind: IndicatorKindName.default('ipv4'),
    band: z.enum(SCORE_BANDS).optional().describe("Live score in this band of the organization's settings (`live.*_score`)"),
    min_score: LiveScoreBound.optional().describe('Live score at least this'),
    max_score: LiveScoreBound.optional().describe('Live score at most this'),
    decision: z.enum(['none', '0', '1']).optional().describe("The organization's decision: none, 0 whitelist, 1 block"),
    source: z.string().trim().min(1).max(128).optional().describe('IPv4 only: reported with this source (exact, e.g. `ssh`)'),
    tag: z.string().trim().min(1).max(128).optional().describe('Carries this tag (exact)'),
    reporter: OrgId.optional().describe('Reported by this organization (its gid)'),
    country: z
      .string()
      .regex(/^[A-Za-z]{2}$/, { message: 'a country is a two-letter code' })
      .optional()
      .describe('IPv4 only: country code of the address'),
    asn: z
      .string()
      .regex(/^(?:AS)?\d{1,10}$/i, { message: 'an AS number is digits, optionally after AS' })
      .optional()
      .describe('IPv4 only: autonomous system number'),
    q: SearchText.optional(),
    page_size: BrowsePageSize,
    page: PageCursor.optional(),
  })
  .meta({ description: 'Filters over the indicators the organization sees (its delay applies)' });
export type IndicatorListQuery = z.infer<typeof IndicatorListQuery>;

export const IndicatorItem = z
  .object({
    kind: IndicatorKindName,
    value: z.string().describe('Address or CIDR network, domain, URL, or the longest digest held (upper-case hex)'),
    gid: z.string().nullable().describe('IPv4 record identifier; null for other kinds'),
    score: z.int().describe('Score at the anchor `ts` as this organization sees it (s0)'),
    live_score: z.number().describe('Live (decayed) score now'),
    ts: z.int().describe('Anchor, epoch seconds'),
    entry_ts: z.int(),
    members: z.int().describe('Distinct reporting organizations'),
    events: z.int(),
    sources: z.array(z.string()).describe('IPv4: sources of the reports; empty for other kinds'),
    tags: z.array(z.string()),
    country: z.string().nullable().describe('IPv4: country code; null otherwise or unknown'),
    asn: z.string().nullable(),
    as_name: z.string().nullable(),
    decision: z.literal([0, 1]).nullable().describe("The organization's decision in force: 0 whitelist, 1 block, null none"),
    ttl: z.int().nullable(),
  })
  .meta({ description: 'One indicator as the organization sees it' });
export type IndicatorItem = z.infer<typeof IndicatorItem>;

export const IndicatorListResponse = z
  .object({
    items: z.array(IndicatorItem),
    next_page: z.string().nullable().describe('Cursor of the next page; null on the last page'),
  })
  .meta({ description: 'A page of indicators, most recently changed first' });
export type IndicatorListResponse = z.infer<typeof IndicatorListResponse>;
