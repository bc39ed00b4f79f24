import { lastSecondAtOrAbove } from '@rampart/scoring';
import type { FileRow, Ipv4Row, NamedRow, Organization, Store } from '../../store/index.ts';
import { NEVER_DECAYS } from '../../store/indicator-sql.ts';
import { delaySeconds } from '../envelope.ts';
import { fileFeedRows } from '../named/files.ts';
import { ipv4FeedRows } from '../ipv4/feed.ts';
import { loadIpv4Policy, reservedRangeOf, type Ipv4Policy } from '../ipv4/policy.ts';
import { namedFeedRows } from '../named/named-indicators.ts';
import type { IndicatorKind, IndicatorState } from './stix21.ts';

// Where the TAXII collections read their indicators: the feeds' own pages (`/ips`, `/files`,
// `/domains`, `/urls`: the same anchors, decisions and delay), a look-up by row id, and the rows
// whose validity ends in a span of seconds (decayed away, or a blacklist's ttl run out).

/** The organization's view for one read: its IPv4 policy and the lowest score of its bands. */
export interface OrgView {
  org: Organization;
  lowestScore: number;
  policy: Ipv4Policy;
}

export async function orgView(store: Store, org: Organization): Promise<OrgView> {
  const [{ document }, policy] = await Promise.all([store.settings.organizationCached(org.id), loadIpv4Policy(store, org.id)]);
  const { low_score, medium_score, high_score, critical_score } = document.live;
  return { org, policy, lowestScore: Math.min(low_score[0], medium_score[0], high_score[0], critical_score[0]) };
}

/** Per s0 = 0..1000: the last second its live score is at or above `threshold` (decayEndSql's offsets). */
export function decayOffsets(threshold: number): number[] {
  return Array.from({ length: 1001 }, (_, s0) => {
    const last = lastSecondAtOrAbove(s0, threshold);
    return last === Infinity ? NEVER_DECAYS : last;
  });
}

export function ipv4State(row: Ipv4Row, policy: Ipv4Policy): IndicatorState {
  const reserved = reservedRangeOf(policy, row.network) !== null;
  const decision = reserved || row.decision === 0 ? 0 : row.decision === 1 ? 1 : -1;
  const tags = [...row.tags, ...row.sources];
  const ruleScore = policy.rule && policy.rule.tags.some((t) => tags.includes(t)) ? policy.rule.score : null;
  const value = row.network.endsWith('/32') ? row.network.slice(0, -3) : row.network;
  return {
    kind: 'ipv4',
    id: Number(row.id),
    subject: { kind: 'ipv4', value, isNetwork: row.is_network },
    score: row.score,
    ts: Number(row.ts),
    entryTs: Number(row.entry_ts),
    members: row.members,
    events: row.events,
    tags: row.tags,
    decision,
    ttl: decision === 1 && row.ttl !== null ? Number(row.ttl) : null,
    ruleScore,
  };
}

/** The fields every named kind's record carries the same way (no ttl, no blocking rule for these kinds). */
function namedFields(row: NamedRow | FileRow): Omit<IndicatorState, 'kind' | 'subject'> {
  return {
    id: Number(row.id),
    score: row.score,
    ts: Number(row.ts),
    entryTs: Number(row.entry_ts),
    members: row.members,
    events: row.events,
    tags: row.tags,
    decision: row.decision === 0 || row.decision === 1 ? row.decision : -1,
    ttl: null,
    ruleScore: null,
  };
}

export function namedState(kind: 'domain' | 'url', row: NamedRow): IndicatorState {
  return { kind, subject: { kind, value: row.value }, ...namedFields(row) };
}

export function fileState(row: FileRow): IndicatorState {
  return { kind: 'file', subject: { kind: 'file', md5: row.md5, sha1: row.sha1, sha256: row.sha256, fileName: row.file_name, fileType: row.file_type }, ...namedFields(row) };
}

export interface IndicatorSource {
  /** The feeds' first unsettled second (a page's exclusive bound before the organization's delay). */
  settled(): Promise<number>;
  /** A feed page: records with ts > since in (ts, id) order, never splitting a second. */
  page(view: OrgView, since: number, pageSize: number, settled: number): Promise<IndicatorState[]>;
  byId(view: OrgView, id: number): Promise<IndicatorState | undefined>;
  /** Candidates whose validity may end in (after, before); the caller computes each end exactly. */
  ending(view: OrgView, after: number, before: number): Promise<IndicatorState[]>;
}

export function indicatorSource(store: Store, kind: IndicatorKind): IndicatorSource {
  switch (kind) {
    case 'ipv4':
      return {
        settled: () => store.ipv4.completeBefore(),
        page: async (v, since, size, settled) => (await ipv4FeedRows(store, v.org, since, size, settled)).map((r) => ipv4State(r, v.policy)),
        byId: async (v, id) => {
          const row = await store.ipv4.byId(v.org.id, id);
          return row && ipv4State(row, v.policy);
        },
        ending: async (v, after, before) => {
          const rule = v.policy.rule ? decayOffsets(v.policy.rule.score) : null;
          return (await store.ipv4.decayingBetween(v.org.id, decayOffsets(v.lowestScore), rule, after, before)).map((r) => ipv4State(r, v.policy));
        },
      };
    case 'domain':
    case 'url': {
      const named = kind === 'domain' ? store.domains : store.urls;
      return {
        settled: () => named.completeBefore(),
        page: async (v, since, size, settled) => (await namedFeedRows(store, kind, v.org, { ts: since, page_size: size }, settled)).map((r) => namedState(kind, r)),
        byId: async (v, id) => {
          const row = await named.byId(v.org.id, id);
          return row && namedState(kind, row);
        },
        ending: async (v, after, before) => (await named.decayingBetween(v.org.id, decayOffsets(v.lowestScore), after, before)).map((r) => namedState(kind, r)),
      };
    }
    case 'file':
      return {
        settled: () => store.files.completeBefore(),
        page: async (v, since, size, settled) => (await fileFeedRows(store, v.org, { ts: since, page_size: size, min_score: 1 }, settled)).map(fileState),
        byId: async (v, id) => {
          const row = await store.files.byId(v.org.id, id);
          return row && fileState(row);
        },
        ending: async (v, after, before) => (await store.files.decayingBetween(v.org.id, decayOffsets(v.lowestScore), after, before)).map(fileState),
      };
  }
}

/** The exclusive bound of what the organization sees: the feeds' settled second less its delay. */
export function visibleBefore(org: Organization, settled: number): number {
  return Math.min(settled, settled - delaySeconds(org) + 1);
}
