import { createHash, randomUUID } from 'node:crypto';
import { isIpv4Address, type Stix2Bundle } from '@rampart/contracts';
import type { Organization, Store } from '../../store/index.ts';
import { isoMillis, visibleTo } from '../envelope.ts';
import { normalizeDomain, normalizeUrl } from '../named/indicator-names.ts';
import { notFound } from '../named/indicators.ts';
import { loadIpv4Policy, recordDecision } from '../ipv4/policy.ts';
import type { IndicatorState } from './stix21.ts';
import { FILE_HASHES, PLATFORM_NAME, namedPattern, patternString, type StixSubject } from './stix-common.ts';

export { PLATFORM_NAME, patternString, type StixSubject } from './stix-common.ts';
import { fileState, ipv4State, namedState } from './taxii-sources.ts';

// STIX 2.0 bundles for one indicator: the platform's identity, an indicator with a STIX
// pattern, and, from the reports, the observed data and a sighting of the indicator. Object ids
// are derived from what they describe, so the same indicator keeps the same ids across calls and
// replicas; only the bundle id is new each time.

/** When the platform identity object was first defined; it never changes. */
const PLATFORM_CREATED = '2026-01-01T00:00:00.000Z';

export interface StixFacts {
  subject: StixSubject;
  score: number;
  /** Epoch seconds: first report, and the decay anchor (latest change). */
  entryTs: number;
  ts: number;
  members: number;
  events: number;
  tags: string[];
  /** The caller organization's decision (-1 none, 0 whitelist, 1 blacklist). */
  decision: -1 | 0 | 1;
  /** The indicator as STIX 2.1 versions it (stix21.ts); `archived`: read from the archive. */
  state: IndicatorState;
  archived: boolean;
}

/**
 * A STIX id whose UUID part is derived from `name` with the version-4 and variant bits set, as
 * STIX 2.0 identifiers require (RFC 4122 layout): stable for the same input.
 */
export function stableStixId(type: string, name: string): string {
  const h = createHash('sha256').update(`${type}\u0000${name}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x40;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${type}--${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export function stixPattern(subject: StixSubject): string {
  switch (subject.kind) {
    case 'ipv4':
      return subject.isNetwork ? `[ipv4-addr:value ISSUBSET ${patternString(subject.value)}]` : `[ipv4-addr:value = ${patternString(subject.value)}]`;
    default:
      return namedPattern(subject);
  }
}

// RFC 3986 characters a STIX url observable may hold; anything else is percent-encoded.
const URL_CHARS = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%#[\]]/gu;

function observable(subject: StixSubject): Record<string, unknown> | undefined {
  switch (subject.kind) {
    case 'ipv4':
      // The ipv4-addr schema checks `value` as a single address, so networks carry no observable.
      return subject.isNetwork ? undefined : { type: 'ipv4-addr', value: subject.value };
    case 'domain':
      return { type: 'domain-name', value: subject.value };
    case 'url':
      return { type: 'url', value: subject.value.replace(URL_CHARS, (c) => encodeURIComponent(c)) };
    case 'file': {
      const hashes = Object.fromEntries(FILE_HASHES.filter(([key]) => subject[key]).map(([key, name]) => [name, subject[key]!]));
      return { type: 'file', hashes, ...(subject.fileName ? { name: subject.fileName } : {}), mime_type: subject.fileType };
    }
  }
}

function subjectName(subject: StixSubject): string {
  if (subject.kind !== 'file') return subject.value;
  return subject.sha256 ?? subject.sha1 ?? subject.md5 ?? '';
}

const KIND_LABEL = { ipv4: 'IPv4 address', domain: 'Domain', url: 'URL', file: 'File' } as const;

export function stixBundle(facts: Omit<StixFacts, 'state' | 'archived'>): Stix2Bundle {
  const { subject } = facts;
  const key = `${subject.kind}:${subjectName(subject)}`;
  const identity = {
    type: 'identity',
    id: stableStixId('identity', PLATFORM_NAME),
    created: PLATFORM_CREATED,
    modified: PLATFORM_CREATED,
    name: PLATFORM_NAME,
    identity_class: 'organization',
    description: 'Shared cyber-threat-intelligence platform of an alliance of organizations',
  };
  const created = isoMillis(facts.entryTs);
  const modified = isoMillis(Math.max(facts.ts, facts.entryTs));
  const indicator = {
    type: 'indicator',
    id: stableStixId('indicator', key),
    created_by_ref: identity.id,
    created,
    modified,
    name: `${KIND_LABEL[subject.kind]} ${subjectName(subject)}`,
    description: `Crime score ${facts.score} of 1000 (algorithm v3.2) from ${facts.members} organization(s) and ${facts.events} report(s)`,
    // A whitelist decision of the caller's organization says the indicator is benign to it.
    labels: [facts.decision === 0 ? 'benign' : 'malicious-activity'],
    pattern: stixPattern(subject),
    valid_from: isoMillis(facts.ts),
    x_rampart_score: facts.score,
    x_rampart_decision: facts.decision,
    ...(facts.tags.length > 0 ? { x_rampart_tags: facts.tags } : {}),
  };
  const objects: Array<Record<string, unknown> & { type: string; id: string }> = [identity, indicator];
  const observed = observable(subject);
  const observedData = observed
    ? {
        type: 'observed-data',
        id: stableStixId('observed-data', key),
        created_by_ref: identity.id,
        created,
        modified,
        first_observed: created,
        last_observed: modified,
        number_observed: Math.max(1, facts.events),
        objects: { '0': observed },
      }
    : undefined;
  if (observedData) objects.push(observedData);
  objects.push({
    type: 'sighting',
    id: stableStixId('sighting', key),
    created_by_ref: identity.id,
    created,
    modified,
    first_seen: created,
    last_seen: modified,
    count: facts.events,
    sighting_of_ref: indicator.id,
    ...(observedData ? { observed_data_refs: [observedData.id] } : {}),
    where_sighted_refs: [identity.id],
  });
  return { type: 'bundle', id: `bundle--${randomUUID()}`, spec_version: '2.0', objects };
}

const DIGEST = /^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/;
const SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//;

/**
 * The facts of a `GET /stix2/{id}` bundle (`onArchived`: the id was found only in the archive,
 * which is priced as a deep scan). What the id names, read from its shape: IPv4 address, digest, URL (has a scheme) or domain.
 */
export async function stixFactsFor(store: Store, org: Organization, id: string, onArchived: () => Promise<void>): Promise<StixFacts> {
  const orgId = org.id;
  // A record the organization's delay still hides is not held, for it.
  const visible = visibleTo(org, Math.floor(Date.now() / 1000));
  if (isIpv4Address(id)) {
    // The address's own record, else the most specific held network containing it (as GET /ips/{ip}).
    const [rows, policy] = await Promise.all([store.ipv4.holding(orgId, id), loadIpv4Policy(store, orgId)]);
    const row = rows.find(visible);
    if (!row) throw notFound(`IPv4 ${id}`);
    const decided = recordDecision(row, policy, Math.floor(Date.now() / 1000));
    const value = row.network.endsWith('/32') ? row.network.slice(0, -3) : row.network;
    // The IPv4 precedence decides for the caller: reserved and whitelisted records say 0.
    const decision = decided.decision ?? -1;
    return { subject: { kind: 'ipv4', value, isNetwork: row.is_network }, score: row.score, entryTs: row.entry_ts, ts: row.ts, members: row.members, events: row.events, tags: row.tags, decision, state: ipv4State(row, policy), archived: false };
  }
  if (DIGEST.test(id)) {
    // The archive too: a bundle describes what the platform knows, wherever it is kept.
    let row = await store.files.byDigest(orgId, id);
    if (row && !visible(row)) row = undefined;
    const archived = !row;
    if (!row) {
      row = await store.files.archivedByDigest(orgId, id);
      if (row && !visible(row)) row = undefined;
      // Found only in the archive: that is a deep scan, priced as one.
      if (row) await onArchived();
    }
    if (!row) throw notFound(`digest ${id.toUpperCase()}`);
    return {
      subject: { kind: 'file', md5: row.md5, sha1: row.sha1, sha256: row.sha256, fileName: row.file_name, fileType: row.file_type },
      score: row.score, entryTs: row.entry_ts, ts: row.ts, members: row.members, events: row.events, tags: row.tags, decision: row.decision ?? -1,
      state: fileState(row), archived,
    };
  }
  const kind = SCHEME.test(id) ? 'url' : 'domain';
  const value = kind === 'url' ? normalizeUrl(id, 'params.stix2id') : normalizeDomain(id, 'params.stix2id');
  const row = await (kind === 'url' ? store.urls : store.domains).byValue(orgId, value);
  if (!row || !visible(row)) throw notFound(`${kind} ${value}`);
  return { subject: { kind, value }, score: row.score, entryTs: row.entry_ts, ts: row.ts, members: row.members, events: row.events, tags: row.tags, decision: row.decision ?? -1, state: namedState(kind, row), archived: false };
}
