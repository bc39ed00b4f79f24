import { reanchoredScore } from '@rampart/scoring';
import { ApiError, canonicalDigest, type FileDecisionBody, type FileRecord, type FileReportBody, type FilesFeedQuery } from '@rampart/contracts';
import type { DecisionNote, FileRow, Organization, Store } from '../../store/index.ts';
import { delaySeconds, visibleTo } from '../envelope.ts';
import type { EventBus } from '../events.ts';
import { catalogFileType } from './file-type-catalog.ts';
import { explanation, fileRecord, notFound, v32Scorer } from './indicators.ts';

// Spec 4.3 (except the score list): the rules of file reports, decisions, the feed and look-ups.

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** A file type must be one of `GET /file_types` (any case): its catalog name. */
function knownFileType(value: string, path: string): string {
  const name = catalogFileType(value);
  if (!name) throw new ApiError('validation_failed', `${path}: '${value}' is not one of GET /file_types`, { errors: [{ path, message: 'not one of GET /file_types' }] });
  return name;
}

/** A report of a file (acknowledged once stored); the feed moves when its record does. */
export async function reportFile(store: Store, events: EventBus, orgId: number, body: FileReportBody): Promise<void> {
  const outcome = await store.files.report(
    {
      orgId,
      md5: body.md5,
      sha1: body.sha1,
      sha256: body.sha256,
      fileType: knownFileType(body.file_type, 'body.file_type'),
      fileName: body.file_name,
      fileBytes: body.file_bytes === undefined ? undefined : Buffer.from(body.file_bytes, 'base64'),
      confidence: body.confidence,
      tags: body.tags,
      nowTs: nowSeconds(),
    },
    v32Scorer,
  );
  if (outcome.moved) await events.publish({ type: 'feed_changed', org_id: null, kind: 'file', ts: outcome.ts });
}

/** The organization's decision on a file, by any of its digests (any case). */
export async function decideFile(store: Store, events: EventBus, orgId: number, digest: string, body: Pick<FileDecisionBody, 'decision'>, note: DecisionNote): Promise<void> {
  // DigestParams admits only MD5/SHA1/SHA256 hex: the canonical form always exists.
  const canonical = canonicalDigest(digest)!;
  const decision = body.decision as -1 | 0 | 1;
  const ts = await store.files.setDecision(orgId, canonical, decision, reanchoredScore, note);
  await events.publish({ type: 'feed_changed', org_id: orgId, kind: 'file', ts });
  // `ts` versions the push against the feed (the agent drops it once the feed has brought as new).
  await events.publish({ type: 'decision_changed', org_id: orgId, kind: 'file', indicator: canonical, decision, ttl: null, ts });
}

/** One feed page: records with ts strictly greater than `ts`, the organization's delay and the query's filters applied. */
export function fileFeedRows(store: Store, org: Organization, q: FilesFeedQuery, settled?: number): Promise<FileRow[]> {
  return store.files.feedPage(org.id, q.ts, q.page_size, delaySeconds(org), {
    // Scores are whole numbers: score >= 0.5 is score >= 1.
    minScore: Math.ceil(q.min_score),
    fileType: q.file_type === undefined ? undefined : knownFileType(q.file_type, 'querystring.file_type'),
    fileName: q.file_name,
    tags: q.tags,
  }, settled);
}

/**
 * The record of a digest (404 when not held, or hidden by the organization's delay). The archive
 * is read in the same statement as the main store; a deep scan pays `chargeDeepScan` (and uses
 * the archived row) only when the main store has no such file.
 */
export async function lookupFile(store: Store, org: Organization, digest: string, options: { deep: boolean; explain: boolean; chargeDeepScan: () => Promise<void> }): Promise<FileRecord> {
  // Concurrent look-ups of this replica leave as one statement (Store.fileLookups).
  const found = await store.fileLookups.lookup(org.id, digest, options.deep);
  // A record the organization's delay still hides is not held, for it.
  const visible = visibleTo(org, nowSeconds());
  let row = found.main && visible(found.main) ? found.main : undefined;
  if (!row && options.deep) {
    await options.chargeDeepScan();
    row = found.archived && visible(found.archived) ? found.archived : undefined;
  }
  if (!row) throw notFound(`digest ${digest.toUpperCase()}`);
  const record = fileRecord(row);
  if (options.explain) {
    const aggregates = row.archived ? [] : await store.files.aggregates(row.id);
    record.explain = row.archived ? { archived: true, s0: row.score, anchor_ts: row.ts } : explanation(aggregates, row, nowSeconds());
  }
  return record;
}
