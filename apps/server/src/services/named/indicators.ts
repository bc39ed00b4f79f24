import { ApiError, type DomainRecord, type FileRecord, type ScoreExplanation, type UrlRecord } from '@rampart/contracts';
import { liveScore, scoreV32, V32_VERSION } from '@rampart/scoring';
import type { FileRow, NamedRow, ReportAggregate, Scorer } from '../../store/index.ts';
export type { NamedRow } from '../../store/index.ts';
import { isoMillis } from '../envelope.ts';

/** s0 by algorithm v3.2 from one aggregate per distinct reporting organization. */
export const v32Scorer: Scorer = (aggregates) => scoreV32(toOrgAggregates(aggregates)).s0;

function toOrgAggregates(aggregates: ReportAggregate[]) {
  return aggregates.map((a) => ({ orgTrust: a.trust, confidence: a.confidence, events: a.events }));
}

/** `explain=yes`: the components that made s0, and the live score now. */
export function explanation(aggregates: ReportAggregate[], row: { score: number; ts: number }, nowSeconds: number): ScoreExplanation {
  const { s0, components } = scoreV32(toOrgAggregates(aggregates));
  return {
    algorithm: V32_VERSION,
    s0,
    ...components,
    anchor_ts: row.ts,
    live_score: liveScore(row.score, nowSeconds - row.ts),
    reporters: aggregates.map((a) => ({ trust: a.trust, confidence: a.confidence, events: a.events })),
  };
}

function shared(row: NamedRow | FileRow) {
  return {
    score: row.score,
    ts: row.ts,
    total_reports: row.events,
    total_members: row.members,
    tags: row.tags,
    elk_ts: isoMillis(row.ts),
    elk_entry_ts: isoMillis(row.entry_ts),
    entry_ts: row.entry_ts,
    // null, not -1, when none applies (decisions.md, Compatibility).
    decision: row.decision === 0 || row.decision === 1 ? row.decision : null,
  };
}

export function domainRecord(row: NamedRow): DomainRecord {
  return { domain: row.value, ...shared(row) };
}

export function urlRecord(row: NamedRow): UrlRecord {
  return { url: row.value, ...shared(row) };
}

/** Samples travel only with single look-ups; feed pages carry `file_bytes: null`. */
export function fileRecord(row: FileRow): FileRecord {
  return {
    md5: row.md5 ?? '',
    sha1: row.sha1 ?? '',
    sha256: row.sha256 ?? '',
    file_bytes: row.file_bytes ? Buffer.from(row.file_bytes).toString('base64') : null,
    file_type: row.file_type,
    file_name: row.file_name,
    ...shared(row),
  };
}

/** 404 for an indicator the caller's organization does not hold (or does not see yet). */
export function notFound(what: string): ApiError {
  return new ApiError('not_found', `${what} is not a known indicator`);
}
