import { reanchoredScore } from '@rampart/scoring';
import type { FastifyRequest } from 'fastify';
import type { ScoreExplanation } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { chargeFeedPage } from '../plugins/coins.ts';
import { delaySeconds, visibleTo } from '../services/envelope.ts';
import { explanation, v32Scorer, type NamedRow } from '../services/indicators.ts';
import { feedUser, notFound, nowSeconds } from './indicator-common.ts';

// The handlers domains and URLs share; each resource folder wires them to its own schemas
// with its own normalizer, so both kinds follow one set of rules.

type Kind = 'domain' | 'url';

function storeOf(context: AppContext, kind: Kind) {
  return kind === 'domain' ? context.store.domains : context.store.urls;
}

export async function reportNamed(context: AppContext, request: FastifyRequest, kind: Kind, value: string, body: { confidence: number; tags?: string[] | undefined }) {
  const principal = principalOf(request);
  const outcome = await storeOf(context, kind).report({ orgId: principal.org.id, value, confidence: body.confidence, tags: body.tags, nowTs: nowSeconds() }, v32Scorer);
  if (outcome.moved) await context.events.publish({ type: 'feed_changed', org_id: null, kind, ts: outcome.ts });
}

export async function decideNamed(context: AppContext, request: FastifyRequest, kind: Kind, value: string, decision: number) {
  const principal = principalOf(request);
  const d = decision as -1 | 0 | 1;
  await storeOf(context, kind).setDecision(principal.org.id, value, d, reanchoredScore);
  await context.events.publish({ type: 'feed_changed', org_id: principal.org.id, kind, ts: nowSeconds() });
  await context.events.publish({ type: 'decision_changed', org_id: principal.org.id, kind, indicator: value, decision: d, ttl: null });
}

export async function namedFeed<T>(context: AppContext, request: FastifyRequest, kind: Kind, query: { ts: number; page_size: number }, toRecord: (row: NamedRow) => T) {
  const principal = principalOf(request);
  const rows = await storeOf(context, kind).feedPage(principal.org.id, query.ts, query.page_size, delaySeconds(principal.org));
  // The "nothing new" poll costs nothing.
  chargeFeedPage(request, rows.length);
  return {
    header: { version: 4 as const, ts: query.ts, next_ts: rows.at(-1)?.ts ?? query.ts, page_size: query.page_size, user: await feedUser(context, request) },
    body: rows.map(toRecord),
  };
}

export async function lookupNamed<T extends { explain?: ScoreExplanation }>(
  context: AppContext,
  request: FastifyRequest,
  kind: Kind,
  value: string,
  explain: boolean,
  toRecord: (row: NamedRow) => T,
): Promise<T> {
  const principal = principalOf(request);
  const store = storeOf(context, kind);
  const row = await store.byValue(principal.org.id, value);
  // A record the organization's delay still hides is not held, for it.
  if (!row || !visibleTo(principal.org, nowSeconds())(row)) throw notFound(`${kind} ${value}`);
  const record = toRecord(row);
  if (explain) record.explain = explanation(await store.aggregates(row.id), row, nowSeconds());
  return record;
}
