import { reanchoredScore } from '@rampart/scoring';
import type { ScoreExplanation } from '@rampart/contracts';
import type { DecisionNote, NamedRow, Organization, Store } from '../../store/index.ts';
import { delaySeconds, visibleTo } from '../envelope.ts';
import type { EventBus } from '../events.ts';
import { explanation, notFound, v32Scorer } from './indicators.ts';

// The rules domains and URLs share (spec 4.4, 4.5): reports, decisions, the feed and look-ups,
// one set for both kinds; the caller has normalized the value (indicator-names.ts).

export type NamedKind = 'domain' | 'url';

function storeOf(store: Store, kind: NamedKind) {
  return kind === 'domain' ? store.domains : store.urls;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** A report of a domain or URL (acknowledged once stored); the feeds move when its record does. */
export async function reportNamed(store: Store, events: EventBus, kind: NamedKind, orgId: number, value: string, body: { confidence: number; tags?: string[] | undefined }): Promise<void> {
  const outcome = await storeOf(store, kind).report({ orgId, value, confidence: body.confidence, tags: body.tags, nowTs: nowSeconds() }, v32Scorer);
  if (outcome.moved) await events.publish({ type: 'feed_changed', org_id: null, kind, ts: outcome.ts });
}

/** The organization's decision on a domain or URL. */
export async function decideNamed(store: Store, events: EventBus, kind: NamedKind, orgId: number, value: string, decision: number, note: DecisionNote): Promise<void> {
  const d = decision as -1 | 0 | 1;
  const ts = await storeOf(store, kind).setDecision(orgId, value, d, reanchoredScore, note);
  await events.publish({ type: 'feed_changed', org_id: orgId, kind, ts });
  // `ts` versions the push against the feed (the agent drops it once the feed has brought as new).
  await events.publish({ type: 'decision_changed', org_id: orgId, kind, indicator: value, decision: d, ttl: null, ts });
}

/**
 * One feed page (records with ts strictly greater than `ts`, the organization's delay applied);
 * `settled`: the first unsettled second read beforehand (TAXII bounds its other reads with it).
 */
export function namedFeedRows(store: Store, kind: NamedKind, org: Organization, query: { ts: number; page_size: number }, settled?: number): Promise<NamedRow[]> {
  return storeOf(store, kind).feedPage(org.id, query.ts, query.page_size, delaySeconds(org), settled);
}

/**
 * The record of one value (404 when not held, or hidden by the organization's delay), explained on
 * demand; the organization's own decision record when nobody reported the value (migration 0018).
 */
export async function lookupNamed<T extends { explain?: ScoreExplanation }>(store: Store, kind: NamedKind, org: Organization, value: string, explain: boolean, toRecord: (row: NamedRow) => T): Promise<T> {
  const named = storeOf(store, kind);
  const row = await named.lookup(org.id, value);
  // A record the organization's delay still hides is not held, for it.
  if (!row || !visibleTo(org, nowSeconds())(row)) throw notFound(`${kind} ${value}`);
  const record = toRecord(row);
  if (explain) record.explain = explanation(await named.aggregates(row.id), row, nowSeconds());
  return record;
}
