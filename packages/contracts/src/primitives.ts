import { z } from 'zod';
import type * as core from 'zod/v4/core';
import { ID_PREFIX, ROLE, ROLE_DESCRIPTIONS } from './constants.ts';

/** Decimal numerals only: no exponent, no hex, no surrounding blanks, so "" or " 1" never pass. */
const NUMERIC_STRING = /^-?\d{1,16}(\.\d{1,16})?$/;

/**
 * A body number that may also arrive as a numeric string (`"decision": "1"`), as the
 * original clients send. Only strings are converted: null, booleans and other strings
 * fail, so a missing value can never silently become 0.
 * Give these schemas defaults with `.prefault()`: JSON Schema drops a plain `.default()` of a
 * transforming schema from the input (request) document.
 */
export function numberLike<T extends core.$ZodType<unknown, number>>(bounded: T) {
  return z.union([z.number(), z.string().regex(NUMERIC_STRING).transform(Number)]).pipe(bounded);
}

function unique(values: readonly unknown[]): boolean {
  return new Set(values).size === values.length;
}

/** An array schema whose items must differ; published as `uniqueItems` in JSON Schema. */
export function uniqueArray<T extends z.ZodType>(item: T, min: number, max: number) {
  return z
    .array(item)
    .min(min)
    .max(max)
    .refine(unique, { message: 'items must be unique' })
    .meta({ uniqueItems: true });
}

export const Ipv4Address = z.ipv4().describe('A single IPv4 address in dotted decimal');
export const Ipv4Network = z.cidrv4().describe('An IPv4 network in CIDR notation');
export const Ipv4OrNetwork = z.union([Ipv4Address, Ipv4Network]).describe('An IPv4 address or an IPv4 CIDR network');

const LABEL = String.raw`(?!-)[\p{L}\p{M}\p{N}-]{1,63}(?<!-)`;
// A top-level label is alphabetic or punycode, which keeps dotted IPv4 addresses out.
const TLD = String.raw`(?:[\p{L}\p{M}]{2,63}|[xX][nN]--[a-zA-Z0-9-]{1,59}(?<!-))`;
// One trailing dot (the fully qualified form) is accepted; the server stores names without it.
const DOMAIN_NAME_RE = new RegExp(`^(?:${LABEL}\\.)+${TLD}\\.?$`, 'u');

export const DomainName = z
  .string()
  .max(253)
  .regex(DOMAIN_NAME_RE, { message: 'not a valid domain name' })
  .describe('A domain name: labels of 1-63 letters, digits or hyphens, at most 253 characters; IDN as Unicode or punycode');

export const IndicatorUrl = z
  .url({ protocol: /^(https?|ftp)$/, message: 'not a valid http, https or ftp URL' })
  .max(2048)
  .describe('An absolute http, https or ftp URL');

const hex = (length: number) => new RegExp(`^[0-9a-fA-F]{${length}}$`);
const upperHex = (length: number) => new RegExp(`^[0-9A-F]{${length}}$`);

export const Md5Hex = z.string().regex(hex(32), { message: 'not an MD5 digest (32 hex digits)' });
export const Sha1Hex = z.string().regex(hex(40), { message: 'not a SHA1 digest (40 hex digits)' });
export const Sha256Hex = z.string().regex(hex(64), { message: 'not a SHA256 digest (64 hex digits)' });
export const AnyDigest = z
  .string()
  .regex(/^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/, { message: 'not an MD5, SHA1 or SHA256 hex digest' })
  .describe('An MD5, SHA1 or SHA256 digest in hex, any case');

export const Md5Upper = z.string().regex(upperHex(32)).describe('MD5 digest, uppercase hex');
export const Sha1Upper = z.string().regex(upperHex(40)).describe('SHA1 digest, uppercase hex');
export const Sha256Upper = z.string().regex(upperHex(64)).describe('SHA256 digest, uppercase hex');

/** Commas are excluded because the `/files?tags=` filter is comma-separated. */
export const Tag = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[^,\u0000-\u001f]+$/, { message: 'a tag holds no commas or control characters' });

export const EpochSeconds = z.int().min(0).describe('Seconds since the Unix epoch');
export const IsoTimestamp = z.iso.datetime({ precision: 3 }).describe('ISO 8601 UTC time with milliseconds');
export const Score = z.int().min(1).max(1000).describe('Crime score, 1 to 1000');
export const Count = z.int().min(0);

export const Confidence = numberLike(z.number().min(0).max(1)).describe('Confidence of the reporter, 0.0 to 1.0');

/** Body decision: -1 follow the score, 0 whitelist, 1 block (bounds -2 and 2 exclusive). */
export const DecisionInput = numberLike(z.int().gt(-2).lt(2)).describe('-1 follow the score, 0 whitelist, 1 block/blacklist');
export const DecisionValue = z.literal([-1, 0, 1]).describe('-1 follow the score, 0 whitelist, 1 block/blacklist');
export type DecisionValue = z.infer<typeof DecisionValue>;

/** Longest reason a decision may carry (issue 37). */
export const MAX_DECISION_REASON = 500;
/** Why a decision was taken: kept with it, shown in the decisions listing, "why" and the audit log. */
export const DecisionReason = z
  .string()
  .trim()
  .max(MAX_DECISION_REASON)
  .describe(`Why (at most ${MAX_DECISION_REASON} characters): kept with the decision and in the audit log`);

export const Role = z
  .literal([ROLE.reader, ROLE.contributor, ROLE.admin, ROLE.operator])
  .describe(`Role code: ${Object.entries(ROLE_DESCRIPTIONS).map(([code, text]) => `${code} = ${text}`).join('; ')}`);
export type Role = z.infer<typeof Role>;

const idPattern = (prefix: string) => new RegExp(`^${prefix}[A-Za-z0-9]+$`);

export const UserId = z.string().max(128).startsWith(ID_PREFIX.user).describe(`User identifier, prefix ${ID_PREFIX.user}`);
export const OrgId = z.string().max(128).startsWith(ID_PREFIX.org).describe(`Organization identifier, prefix ${ID_PREFIX.org}`);
export const RuleId = z.string().max(128).startsWith(ID_PREFIX.rule).describe(`IPv4 record identifier, prefix ${ID_PREFIX.rule}`);
export const VpnId = z
  .string()
  .max(128)
  .startsWith(ID_PREFIX.vpn)
  .regex(/^[A-Za-z0-9_-]+$/)
  .describe(`VPN license identifier, prefix ${ID_PREFIX.vpn}`);
export const AgentId = z
  .string()
  .max(128)
  .regex(idPattern(ID_PREFIX.agent), { message: `must be ${ID_PREFIX.agent} followed by letters and digits` })
  .describe(`Global agent identifier: ${ID_PREFIX.agent} followed by a unique alphanumeric string`);

/** Enumerations used by several queries; values are exactly as specified (case matters). */
export const YesNoUpper = z.enum(['YES', 'NO']);
export const YesNo = z.enum(['yes', 'no']);
export const ListFormat = z.enum(['CSV', 'LIST']);
export const PageCursor = z.string().min(1).max(1024).describe('Cursor from the `next_page` response header of the previous call');
export const ExplainFlag = YesNo.default('no').describe('yes adds the components of the score to a single look-up');
