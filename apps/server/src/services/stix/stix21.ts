import { createHash, randomUUID } from 'node:crypto';
import { lastSecondAtOrAbove, liveScore } from '@rampart/scoring';
import { isoMillis } from '../envelope.ts';
import { PLATFORM_NAME, namedPattern, patternString, type StixSubject } from './stix-common.ts';

// STIX 2.1 indicators (OASIS STIX 2.1, section 4.7) for the TAXII collections and `/stix2?spec_version=2.1`.
// An indicator object is one held indicator as one organization sees it. Its versions follow
// from the (ts, score) anchor that organization sees and from its decisions, the pair and the
// precedence every other feed uses: each anchor is a version (`modified` = its `ts`), valid from
// it until its validity ends (see validityEnd); an anchor the organization whitelisted (or that
// lies in one of its reserved ranges) is a revoked version, and the end of a validity that has
// passed is one more version, revoked, at that second. Earlier anchors are not kept: the
// versions an object has are those of its current anchor (one, or two once it decayed away).

export type IndicatorKind = 'ipv4' | 'domain' | 'url' | 'file';

/** What the versions and objects of one indicator are made of, for one organization. */
export interface IndicatorState {
  kind: IndicatorKind;
  /** The indicator's row id in its kind's table. */
  id: number;
  subject: StixSubject;
  /** The anchor as the organization sees it: s0 at `ts` (epoch seconds). */
  score: number;
  ts: number;
  entryTs: number;
  members: number;
  events: number;
  tags: string[];
  /**
   * The organization's decision: 0 whitelisted (or, for IPv4, in one of its reserved ranges),
   * 1 blacklisted until `ttl` (null: no end), -1 none: the score decides.
   */
  decision: -1 | 0 | 1;
  ttl: number | null;
  /** IPv4: the score of the organization's blocking rule when the indicator carries one of its tags. */
  ruleScore: number | null;
}

export interface IndicatorVersion {
  /** Epoch seconds: `modified`, the TAXII version and its `date_added`. */
  modified: number;
  revoked: boolean;
  /** End of validity (epoch seconds), null when none is known. */
  validUntil: number | null;
  /** Live score at `modified`, mapped to `confidence`. */
  liveScore: number;
}

/** When the organization first defined the alliance's identity object; it never changes. */
const IDENTITY_CREATED = '2026-01-01T00:00:00.000Z';
export const IDENTITY_CREATED_TS = Date.parse(IDENTITY_CREATED) / 1000;

/** The one identity every object's `created_by_ref` names: the alliance running the platform. */
export const ALLIANCE_IDENTITY = Object.freeze({
  type: 'identity',
  spec_version: '2.1',
  id: `identity--${uuidOf('identity', PLATFORM_NAME)}`,
  created: IDENTITY_CREATED,
  modified: IDENTITY_CREATED,
  name: `${PLATFORM_NAME} alliance`,
  description: 'Shared cyber-threat-intelligence platform of an alliance of organizations',
  identity_class: 'organization',
});

function uuidOf(type: string, name: string): string {
  const h = createHash('sha256').update(`${type}\u0000${name}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x40;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

const KIND_CODES: Record<IndicatorKind, string> = { ipv4: '4', domain: 'd', url: 'u', file: 'f' };
const MAX_ROW_ID = 2 ** 48 - 1;

/**
 * The indicator object's id: a UUID (version-4 layout) whose last 12 hex digits are the row id
 * and whose other digits are a hash of kind and row id, so that the id names one indicator of
 * one kind for good and can be read back (parseIndicatorId) without a table of ids.
 */
export function indicatorId(kind: IndicatorKind, id: number): string {
  const u = uuidOf('indicator', `${KIND_CODES[kind]}:${id}`);
  return `indicator--${u.slice(0, 24)}${id.toString(16).padStart(12, '0')}`;
}

/** The row id an indicator id of `kind` names, or null when it names none of that kind. */
export function parseIndicatorId(kind: IndicatorKind, stixId: string): number | null {
  const m = /^indicator--[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-([0-9a-f]{12})$/.exec(stixId);
  if (!m) return null;
  const id = Number.parseInt(m[1]!, 16);
  if (id < 1 || id > MAX_ROW_ID) return null;
  return indicatorId(kind, id) === stixId ? id : null;
}

/** First second at which the live score of (score, ts) is below `threshold`; null when never. */
function endBelow(score: number, ts: number, threshold: number): number | null {
  const last = lastSecondAtOrAbove(score, threshold);
  return last === Infinity ? null : ts + last + 1;
}

function later(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : Math.max(a, b);
}

/**
 * The first second the indicator is no longer in force for the organization (null: no end):
 * whitelisted, at its anchor; otherwise when its live score falls below the organization's
 * lowest band, or later while a blacklist (until its ttl) or the blocking rule (while the live
 * score is at or above the rule's) still holds it — the precedence of `isBlocked`.
 */
export function validityEnd(state: IndicatorState, lowestScore: number): number | null {
  if (state.decision === 0) return state.ts;
  let end = endBelow(state.score, state.ts, lowestScore);
  if (state.decision === 1) end = state.ttl === null ? null : later(end, state.ttl);
  if (state.ruleScore !== null) end = later(end, endBelow(state.score, state.ts, state.ruleScore));
  return end;
}

/**
 * The versions of the indicator's object as the organization sees them, oldest first: its
 * anchor, and, once its validity ended before `revealBefore` (the feeds' first unsettled
 * second, after the organization's delay), a revoked version at that end.
 */
export function versionsOf(state: IndicatorState, lowestScore: number, revealBefore: number): IndicatorVersion[] {
  const end = validityEnd(state, lowestScore);
  if (end !== null && end <= state.ts) return [{ modified: state.ts, revoked: true, validUntil: null, liveScore: state.score }];
  const anchor: IndicatorVersion = { modified: state.ts, revoked: false, validUntil: end, liveScore: state.score };
  if (end === null || end >= revealBefore) return [anchor];
  return [anchor, { modified: end, revoked: true, validUntil: end, liveScore: liveScore(state.score, end - state.ts) }];
}

/** `confidence` (0-100): the live score (1-1000) at the version's `modified`, divided by 10 and rounded. */
export function confidenceOf(score: number): number {
  return Math.min(100, Math.max(0, Math.round(score / 10)));
}

/** A STIX 2.1 pattern: networks as CIDR (`ipv4-addr:value` holds either), file digests joined by OR. */
export function stix21Pattern(subject: StixSubject): string {
  switch (subject.kind) {
    case 'ipv4':
      return `[ipv4-addr:value = ${patternString(subject.value)}]`;
    default:
      return namedPattern(subject);
  }
}

function subjectValue(subject: StixSubject): string {
  if (subject.kind !== 'file') return subject.value;
  return subject.sha256 ?? subject.sha1 ?? subject.md5 ?? '';
}

/** The look-up of the indicator under the API base (`apiBase` ends with /api/v1). */
function lookupUrl(subject: StixSubject, apiBase: string): string {
  switch (subject.kind) {
    case 'ipv4':
      return `${apiBase}/ips/${subject.value.split('/')[0]}`;
    case 'domain':
      return `${apiBase}/domains/${subject.value}`;
    case 'url':
      return `${apiBase}/urls/${encodeURIComponent(subject.value)}`;
    case 'file':
      return `${apiBase}/files/${subjectValue(subject)}`;
  }
}

const KIND_LABEL = { ipv4: 'IPv4 address', domain: 'Domain', url: 'URL', file: 'File' } as const;

/** One version of the indicator's object, as the STIX 2.1 `indicator` SDO. */
export function indicatorObject(state: IndicatorState, version: IndicatorVersion, apiBase: string): Record<string, unknown> & { type: 'indicator'; id: string; modified: string } {
  const { subject } = state;
  const label = subject.kind === 'ipv4' && subject.isNetwork ? 'IPv4 network' : KIND_LABEL[subject.kind];
  const created = state.entryTs > 0 && state.entryTs <= state.ts ? state.entryTs : state.ts;
  return {
    type: 'indicator',
    spec_version: '2.1',
    id: indicatorId(state.kind, state.id),
    created_by_ref: ALLIANCE_IDENTITY.id,
    created: isoMillis(created),
    modified: isoMillis(version.modified),
    name: `${label} ${subjectValue(subject)}`,
    description: `Crime score ${state.score} of 1000 (algorithm v3.2) at ${isoMillis(state.ts)}, from ${state.members} organization(s) and ${state.events} report(s)`,
    indicator_types: [state.decision === 0 ? 'benign' : 'malicious-activity'],
    pattern: stix21Pattern(subject),
    pattern_type: 'stix',
    pattern_version: '2.1',
    valid_from: isoMillis(state.ts),
    ...(version.validUntil !== null ? { valid_until: isoMillis(version.validUntil) } : {}),
    confidence: confidenceOf(version.liveScore),
    ...(version.revoked ? { revoked: true } : {}),
    ...(state.tags.length > 0 ? { labels: state.tags } : {}),
    external_references: [{ source_name: PLATFORM_NAME.toLowerCase(), external_id: subjectValue(subject), url: lookupUrl(subject, apiBase) }],
  };
}

/** A STIX 2.1 bundle (2.1 bundles carry no `spec_version` of their own). */
export function bundle21(objects: Array<Record<string, unknown> & { type: string; id: string }>) {
  return { type: 'bundle' as const, id: `bundle--${randomUUID()}`, objects };
}

/**
 * `/stix2/{id}?spec_version=2.1`: the alliance's identity and the newest version of the
 * indicator's object. A file found only in the archive is no collection's object: its id is
 * derived from its digest instead of a row id.
 */
export function stix21Bundle(state: IndicatorState, lowestScore: number, revealBefore: number, apiBase: string, archived: boolean) {
  const indicator = indicatorObject(state, versionsOf(state, lowestScore, revealBefore).at(-1)!, apiBase);
  if (archived) indicator.id = `indicator--${uuidOf('indicator', `archive:${subjectValue(state.subject)}`)}`;
  return bundle21([ALLIANCE_IDENTITY, indicator]);
}
