import type { DigestKind, Organization, ScoreListFilter, Store } from '../../store/index.ts';
import { visibleUpTo } from '../envelope.ts';
import { liveCutoffs } from '../ipv4/policy.ts';
import { listEntry, type TextListSource } from '../text-list.ts';

// What the caller's organization should block now of files, domains and URLs. The precedence is
// the IPv4 lists' (isBlocked): a whitelist is never listed, a blacklist always is, otherwise the
// live score (v3.2, this second) must reach min_score.

function filterFor(org: Organization, minScore: number, now: number): ScoreListFilter {
  return { orgId: org.id, cutoffs: liveCutoffs(minScore, now), visibleUpTo: visibleUpTo(org, now) };
}

/** A score list's rows, how each is written, and what else its ETag depends on (the decisions). */
/** How many domains or URLs the organization's score list at `minScore` holds now (the server's figure for an agent's read-back). */
export async function namedListCount(store: Store, kind: 'domain' | 'url', org: Organization, minScore: number, now: number): Promise<number> {
  const named = kind === 'domain' ? store.domains : store.urls;
  return Number((await named.listVersion(filterFor(org, minScore, now), null, null)).split(':', 1)[0]);
}

export interface ScoreListAnswer<Row> {
  source: TextListSource<Row, number>;
  line(row: Row): string;
  etagSalt: string;
}

/** `/files/score/{m}`: the digests of one kind (md5, sha1, sha256). */
export async function fileScoreList(store: Store, org: Organization, minScore: number, digest: 'MD5' | 'SHA1' | 'SHA256', now: number): Promise<ScoreListAnswer<{ id: number; hex: string }>> {
  const kind = digest.toLowerCase() as DigestKind;
  const filter = filterFor(org, minScore, now);
  return {
    source: {
      rows: (after, upTo, limit) => store.files.listRows(filter, kind, after, upTo, limit),
      boundary: (after, n) => store.files.listBoundary(filter, kind, after, n),
      version: (after, upTo) => store.files.listVersion(filter, kind, after, upTo),
      key: (row) => row.id,
    },
    line: (row) => row.hex,
    etagSalt: await store.files.decisionsVersion(org.id),
  };
}

/**
 * `/domains/score/{m}` and `/urls/score/{m}`. A domain is written as `protocol://domain` when the
 * consumer (a proxy) names the protocol it matches on. A URL may hold commas (normalization
 * encodes quotes and drops CR/LF, but stored values are not trusted to): it stays one CSV field,
 * one LIST entry, one line.
 */
export async function namedScoreList(
  store: Store,
  kind: 'domain' | 'url',
  org: Organization,
  minScore: number,
  options: { format: 'CSV' | 'LIST'; protocol?: 'HTTP' | 'HTTPS' | undefined },
  now: number,
): Promise<ScoreListAnswer<{ id: number; value: string }>> {
  const named = kind === 'domain' ? store.domains : store.urls;
  const filter = filterFor(org, minScore, now);
  const prefix = options.protocol ? `${options.protocol.toLowerCase()}://` : '';
  return {
    source: {
      rows: (after, upTo, limit) => named.listRows(filter, after, upTo, limit),
      boundary: (after, n) => named.listBoundary(filter, after, n),
      version: (after, upTo) => named.listVersion(filter, after, upTo),
      key: (row) => row.id,
    },
    line: kind === 'url' ? (row) => listEntry(row.value, options.format === 'LIST' ? 'comma' : 'csv') : (row) => `${prefix}${row.value}`,
    etagSalt: await named.decisionsVersion(org.id),
  };
}
