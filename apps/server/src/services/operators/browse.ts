import { ApiError, INDICATOR_KINDS, type DecisionItem, type DecisionListQuery, type DecisionListResponse, type IndicatorItem, type IndicatorListQuery, type IndicatorListResponse } from '@rampart/contracts';
import { liveScore } from '@rampart/scoring';
import type { Organization, Store } from '../../store/index.ts';
import type { CursorCodec } from '../cursor.ts';
import { visibleUpTo } from '../envelope.ts';

/*
 * Browsing the caller's organization's decisions and the indicators it sees. Every query is
 * scoped to the caller's organization by the store; a cursor is signed over the filters it was
 * issued for (services/cursor.ts), so it cannot be replayed with others.
 */

export interface BrowseDeps {
  store: Store;
  cursors: CursorCodec;
}

const fieldError = (path: string, message: string) => new ApiError('validation_failed', `${path}: ${message}`, { errors: [{ path, message }] });

/** Live score as the console shows it: two decimals, the same formula as every consumer. */
const live = (score: number, elapsed: number) => Math.round(liveScore(score, elapsed) * 100) / 100;

/** The filters a cursor is bound to: everything but the cursor and the page size. */
function filtersOf<T extends { page?: string | undefined; page_size: number }>(query: T): Record<string, unknown> {
  const { page: _page, page_size: _size, ...rest } = query;
  return { ...rest };
}

export async function listDecisions(deps: BrowseDeps, org: Organization, query: DecisionListQuery, now: number): Promise<DecisionListResponse> {
  const filters = { scope: 'decisions', org: org.gid, ...filtersOf(query) };
  const after = query.page ? deps.cursors.decode<[string, string, string]>(query.page, filters) : null;
  const rows = await deps.store.browse.decisions({
    orgId: org.id,
    kinds: query.kind ? [query.kind] : [...INDICATOR_KINDS],
    decision: query.decision === undefined ? null : (Number(query.decision) as 0 | 1),
    text: query.q ?? null,
    after,
    limit: query.page_size + 1,
  });
  const more = rows.length > query.page_size;
  const page = rows.slice(0, query.page_size);
  const items: DecisionItem[] = page.map((r) => ({
    kind: r.kind,
    value: r.value,
    decision: r.decision,
    ttl: r.ttl,
    expired: r.decision === 1 && r.ttl !== null && r.ttl <= now,
    updated_at: r.updated_at,
    held: r.held,
    score: r.score,
    live_score: r.score === null || r.ts === null ? null : live(r.score, now - r.ts),
    reason: r.reason,
    set_by: r.set_by,
  }));
  const last = page.at(-1);
  return { items, next_page: more && last ? deps.cursors.encode(filters, [last.micros, last.kind, last.value]) : null };
}

type BandKey = 'low_score' | 'medium_score' | 'high_score' | 'critical_score';

/** Live-score bounds of a band of the organization's settings: [min, max) except critical, [min, max]. */
async function bandBounds(store: Store, orgId: number, band: NonNullable<IndicatorListQuery['band']>): Promise<{ min: number; max: number; inclusive: boolean }> {
  const { document } = await store.settings.organizationCached(orgId);
  const [min, max] = document.live[`${band}_score` as BandKey] as [number, number];
  return { min, max, inclusive: band === 'critical' };
}

function minOf(...values: Array<number | undefined>): number | null {
  const given = values.filter((v): v is number => v !== undefined);
  return given.length === 0 ? null : Math.min(...given);
}

export async function listIndicators(deps: BrowseDeps, org: Organization, query: IndicatorListQuery, now: number): Promise<IndicatorListResponse> {
  if (query.kind !== 'ipv4') {
    for (const field of ['source', 'country', 'asn'] as const) {
      if (query[field] !== undefined) throw fieldError(`querystring.${field}`, `applies to kind ipv4 only, not ${query.kind}`);
    }
  }
  if (query.min_score !== undefined && query.max_score !== undefined && query.min_score > query.max_score) {
    throw fieldError('querystring.min_score', `must not exceed max_score (${query.max_score})`);
  }
  const filters = { scope: 'indicators', org: org.gid, ...filtersOf(query) };
  const after = query.page ? deps.cursors.decode<[number, number]>(query.page, filters) : null;
  let reporterOrgId: number | null = null;
  if (query.reporter !== undefined) {
    const reporter = await deps.store.orgs.byGid(query.reporter);
    // An unknown organization reported nothing: an empty page, not a 404 that confirms gids.
    reporterOrgId = reporter ? reporter.id : -1;
  }
  const band = query.band ? await bandBounds(deps.store, org.id, query.band) : null;
  const asn = query.asn === undefined ? null : `AS${query.asn.replace(/^AS/i, '')}`;
  const rows = await deps.store.browse.indicators({
    orgId: org.id,
    kind: query.kind,
    now,
    visibleUpTo: visibleUpTo(org, now),
    minScore: Math.max(query.min_score ?? 0, band?.min ?? 0) || null,
    maxScore: minOf(query.max_score, band?.inclusive ? band.max : undefined),
    maxExclusive: band && !band.inclusive ? band.max : null,
    decision: query.decision === undefined ? null : query.decision === 'none' ? 'none' : (Number(query.decision) as 0 | 1),
    source: query.source ?? null,
    tag: query.tag ?? null,
    reporterOrgId,
    country: query.country?.toUpperCase() ?? null,
    asn,
    text: query.q ?? null,
    after,
    limit: query.page_size + 1,
  });
  const more = rows.length > query.page_size;
  const page = rows.slice(0, query.page_size);
  const items: IndicatorItem[] = page.map((r) => {
    const decided = r.decision === 0 || (r.decision === 1 && (r.ttl === null || r.ttl > now));
    return {
      kind: query.kind,
      value: r.value,
      gid: r.gid,
      score: r.score,
      live_score: live(r.score, now - r.ts),
      ts: r.ts,
      entry_ts: r.entry_ts,
      members: r.members,
      events: r.events,
      sources: r.sources,
      tags: r.tags,
      country: r.ip_info?.country ?? null,
      asn: r.ip_info?.asn ?? null,
      as_name: r.ip_info?.as_name ?? null,
      decision: decided ? (r.decision as 0 | 1) : null,
      ttl: decided ? r.ttl : null,
    };
  });
  const last = page.at(-1);
  return { items, next_page: more && last ? deps.cursors.encode(filters, [last.ts, last.id]) : null };
}
