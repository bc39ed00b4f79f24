import { z } from 'zod';
import {
  Count,
  DomainName,
  EpochSeconds,
  IndicatorUrl,
  Ipv4OrNetwork,
  IsoTimestamp,
  Md5Upper,
  RuleId,
  Sha1Upper,
  Sha256Upper,
} from './primitives.ts';

/**
 * Components of a score, returned on single look-ups asked with `explain=yes`. Their
 * names belong to the scoring algorithm (documented with it), so the shape stays open.
 */
export const ScoreExplanation = z
  .record(z.string(), z.unknown())
  .meta({ description: 'Components of the score (scoring algorithm v3.2); present only when explain=yes' });
export type ScoreExplanation = z.infer<typeof ScoreExplanation>;

export const IpInfo = z.object({
  as_domain: z.string(),
  as_name: z.string(),
  asn: z.string(),
  continent: z.string().describe('Continent code'),
  continent_name: z.string(),
  country: z.string().describe('Country code'),
  country_name: z.string(),
});
export type IpInfo = z.infer<typeof IpInfo>;

export const IpRecordInfo = z.object({
  members: Count.describe('Distinct reporting organizations'),
  events: Count.describe('Reports received'),
  sources: z.array(z.string()),
  stix_bundles: z.array(z.unknown()),
  attack_infos: z.array(z.unknown()),
  notes: z.array(z.string()).describe('Free text from reporters'),
});
export type IpRecordInfo = z.infer<typeof IpRecordInfo>;

/**
 * A decision as records carry it (decisions.md, Compatibility): existing clients read any present,
 * non-null value as "a decision exists", so "none" is null, never -1 (requests keep -1 as "clear").
 */
export const AppliedDecision = z.literal([0, 1]).nullable();
export type AppliedDecision = z.infer<typeof AppliedDecision>;

/** Spec 2.3; `full=no` omits ip_info, info, elk_ts and elk_entry_ts. */
export const Ipv4Record = z
  .object({
    gid: RuleId,
    ip: Ipv4OrNetwork,
    ts: EpochSeconds.describe('Time zero of the score: the decay clock starts here'),
    entry_ts: EpochSeconds,
    is_network: z.boolean(),
    ip_info: IpInfo.optional(),
    score: z.int().min(0).max(1000).describe('Score at time zero (scoreTimeZero), 1 to 1000; 0 for the organization\'s decision on a value nobody reported'),
    info: IpRecordInfo.optional(),
    elk_ts: IsoTimestamp.optional(),
    elk_entry_ts: IsoTimestamp.optional(),
    delay: z.int().min(0).describe('Seconds by which the caller organization sees new indicators late'),
    dec: z.number().describe('Live (decayed) score now'),
    decision: AppliedDecision.describe(
      "The decision that applies for the caller organization: 0 never block, 1 block until ttl, null none (block when the live score reaches the threshold)",
    ),
    ttl: EpochSeconds.nullable().describe('Epoch seconds until which decision 1 holds; null without limit'),
    explain: ScoreExplanation.optional(),
  })
  .meta({ description: 'An IPv4 address or network indicator' });
export type Ipv4Record = z.infer<typeof Ipv4Record>;

const indicatorShape = {
  score: z.int().min(0).max(1000).describe("Crime score at time zero, 1 to 1000; 0 for the organization's decision on a value nobody reported"),
  ts: EpochSeconds,
  total_reports: Count,
  total_members: Count,
  tags: z.array(z.string()),
  elk_ts: IsoTimestamp,
  elk_entry_ts: IsoTimestamp,
  entry_ts: EpochSeconds,
  decision: AppliedDecision.describe("The caller organization's decision: 0 whitelist, 1 blacklist, null none (follow the score)"),
  explain: ScoreExplanation.optional(),
};

export const FileRecord = z
  .object({
    // A digest no reporter has given yet is '' (a report needs only one of the three).
    md5: z.union([Md5Upper, z.literal('')]),
    sha1: z.union([Sha1Upper, z.literal('')]),
    sha256: z.union([Sha256Upper, z.literal('')]),
    file_bytes: z.base64().nullable().describe('Base64 of at most the first 64 KiB of the sample, or null'),
    file_type: z.string().describe('MIME type'),
    file_name: z.string(),
    ...indicatorShape,
  })
  .meta({ description: 'A file indicator (spec 2.4)' });
export type FileRecord = z.infer<typeof FileRecord>;

export const DomainRecord = z
  .object({ domain: DomainName, ...indicatorShape })
  .meta({ description: 'A domain indicator (spec 2.5)' });
export type DomainRecord = z.infer<typeof DomainRecord>;

export const UrlRecord = z.object({ url: IndicatorUrl, ...indicatorShape }).meta({ description: 'A URL indicator (spec 2.5)' });
export type UrlRecord = z.infer<typeof UrlRecord>;
