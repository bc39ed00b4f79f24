import { ApiError } from '@rampart/contracts';
import type { Db, Queryable } from './db.ts';
import {
  completeBefore,
  type DecisionNote,
  NO_NOTE,
  decisionsVersion,
  anchoredPage,
  anchorForOrg,
  anchorJoin,
  decayEndSql,
  EFFECTIVE,
  type Effective,
  listBoundary,
  listRows,
  listVersion,
  moveDecision,
  scoreListSql,
  type ScoreListFilter,
  heldOrDecisionRecord,
  mergeReport,
  mergeTags,
  reportAggregates,
  type ReportAggregate,
  type ReportOutcome,
  type Scorer,
} from './indicator-sql.ts';

export type DigestKind = 'md5' | 'sha1' | 'sha256';

/** Digest kind by hex length; the route has already checked the hex. */
export function digestKind(hex: string): DigestKind {
  return hex.length === 32 ? 'md5' : hex.length === 40 ? 'sha1' : 'sha256';
}

export interface FileRow {
  id: number;
  /** Upper-case hex, null while no reporter gave that digest. */
  md5: string | null;
  sha1: string | null;
  sha256: string | null;
  file_type: string;
  file_name: string;
  /** Present on look-ups only (feed pages leave samples out). */
  file_bytes?: Uint8Array | null;
  score: number;
  ts: number;
  entry_ts: number;
  members: number;
  events: number;
  tags: string[];
  decision: -1 | 0 | 1 | null;
  /** True when the row comes from the archive (deep scan). */
  archived?: boolean;
}

export interface FileReport {
  orgId: number;
  /** Hex digests, any case; at least one. */
  md5?: string | undefined;
  sha1?: string | undefined;
  sha256?: string | undefined;
  fileType: string;
  fileName?: string | undefined;
  fileBytes?: Buffer | undefined;
  confidence: number;
  tags?: readonly string[] | undefined;
  nowTs: number;
}

export interface FileFeedFilter {
  minScore: number;
  fileType?: string | undefined;
  fileName?: string | undefined;
  tags?: readonly string[] | undefined;
}

export interface ArchivedFile {
  md5: Buffer;
  sha1: Buffer;
  sha256: Buffer;
  file_type: string;
  file_name: string;
  score: number;
  ts: number;
  tags: string[];
}

const hexCol = (c: DigestKind, alias = 'i') => `upper(encode(${alias}.${c}, 'hex')) as ${c}`;
const columns = (e: Effective) => `i.id, ${hexCol('md5')}, ${hexCol('sha1')}, ${hexCol('sha256')}, i.file_type, i.file_name, ${e.score} as score, ${e.ts} as ts,
  i.entry_ts, i.members, i.events, i.tags, d.decision`;
/** The archive has no anchors: its rows' own pairs. */
export const COLUMNS = columns({ ts: 'i.ts', score: 'i.score' });
// A decision names one digest; when several digests of a file carry one, the latest wins.
const DECISION_JOIN = `left join lateral (
    select decision from file_decisions
    where org_id = $1 and digest in (i.md5, i.sha1, i.sha256)
    order by updated_at desc limit 1
  ) d on true`;
const SELECT_WITH_BYTES = `select ${columns(EFFECTIVE)}, i.file_bytes from file_indicators i ${DECISION_JOIN} ${anchorJoin('file', '$1')}`;
const SELECT = `select ${columns(EFFECTIVE)} from file_indicators i ${DECISION_JOIN} ${anchorJoin('file', '$1')}`;
const DIGEST_BYTES: Record<DigestKind, number> = { md5: 16, sha1: 20, sha256: 32 };
const decidedHex = (c: DigestKind) => `case when octet_length(d.digest) = ${DIGEST_BYTES[c]} then upper(encode(d.digest, 'hex')) end as ${c}`;
/**
 * A decision row as its organization's record of a digest nobody reported (migration 0018): that
 * digest alone, no type, name or tags, score 0, its own id and ts. Columns as COLUMNS.
 */
export const DECISION_RECORD = `d.id, ${decidedHex('md5')}, ${decidedHex('sha1')}, ${decidedHex('sha256')}, '' as file_type, '' as file_name, 0 as score, d.ts,
  d.ts as entry_ts, 0 as members, 0 as events, '{}'::text[] as tags, d.decision`;

function bytes(hex: string | undefined): Buffer | null {
  return hex === undefined ? null : Buffer.from(hex, 'hex');
}

export class FileStore {
  constructor(private readonly db: Db) {}

  /**
   * Merges a report into the file that carries any of its digests and commits before returning.
   * Digests the file did not have yet are added; a digest that contradicts the file's own, or
   * digests that name two different known files, are a 409 and change nothing.
   */
  async report(input: FileReport, scorer: Scorer): Promise<ReportOutcome> {
    const given = { md5: bytes(input.md5), sha1: bytes(input.sha1), sha256: bytes(input.sha256) };
    return this.db.transaction(async (tx) => {
      const row = await this.lockOrCreate(tx, given, input.fileType);
      for (const kind of ['md5', 'sha1', 'sha256'] as const) {
        const known = row[kind];
        const wanted = given[kind];
        if (known && wanted && !Buffer.from(known).equals(wanted)) {
          throw new ApiError('conflict', `${kind}: the file with these digests has ${kind} ${Buffer.from(known).toString('hex').toUpperCase()}`, {
            errors: [{ path: `body.${kind}`, message: 'contradicts the digest already known for this file' }],
          });
        }
      }
      const merged = await mergeReport(
        tx,
        'file',
        { indicatorId: row.id, currentTs: Number(row.ts), currentScore: row.score, orgId: input.orgId, confidence: input.confidence, nowTs: input.nowTs },
        scorer,
      );
      await tx.query(
        `update file_indicators set score = $2, ts = $3, members = $4, events = $5, tags = $6,
           md5 = coalesce(md5, $7), sha1 = coalesce(sha1, $8), sha256 = coalesce(sha256, $9),
           file_type = $10, file_name = coalesce($11, file_name), file_bytes = coalesce($12, file_bytes),
           entry_ts = case when entry_ts = 0 then $3 else entry_ts end
         where id = $1`,
        [row.id, merged.score, merged.ts, merged.members, merged.events, mergeTags(row.tags, input.tags), given.md5, given.sha1, given.sha256,
          input.fileType, input.fileName ?? null, input.fileBytes ?? null],
      );
      return { indicatorId: row.id, ts: merged.ts, newReporter: merged.newReporter, moved: merged.moved, score: merged.score };
    });
  }

  private async lockOrCreate(tx: Queryable, given: Record<DigestKind, Buffer | null>, fileType: string) {
    type Locked = { id: number; ts: number; score: number; tags: string[]; md5: Uint8Array | null; sha1: Uint8Array | null; sha256: Uint8Array | null };
    const find = () =>
      tx.query<Locked>('select id, ts, score, tags, md5, sha1, sha256 from file_indicators where md5 = $1 or sha1 = $2 or sha256 = $3 order by id for update', [
        given.md5,
        given.sha1,
        given.sha256,
      ]);
    let found = await find();
    if (found.rows.length === 0) {
      await tx.query(
        `insert into file_indicators (md5, sha1, sha256, file_type, score, ts, entry_ts) values ($1, $2, $3, $4, 1, 0, 0) on conflict do nothing`,
        [given.md5, given.sha1, given.sha256, fileType],
      );
      found = await find();
    }
    if (found.rows.length !== 1) {
      throw new ApiError('conflict', 'the digests given name different known files', {
        errors: [{ path: 'body', message: 'md5, sha1 and sha256 belong to different files' }],
      });
    }
    return found.rows[0]!;
  }

  /**
   * The organization's decision on a digest; the file carrying it is delivered again to that
   * organization, and so is the decision's own record while nobody reports the digest (moveDecision).
   */
  async setDecision(orgId: number, digestHex: string, decision: -1 | 0 | 1, reanchor: (s0: number, elapsed: number) => number, note: DecisionNote = NO_NOTE): Promise<number> {
    const digest = Buffer.from(digestHex, 'hex');
    return this.db.transaction(async (tx) => {
      await tx.query(
        `insert into file_decisions (org_id, digest, decision, reason, set_by) values ($1, $2, $3, $4, $5)
         on conflict (org_id, digest) do update set decision = excluded.decision, reason = excluded.reason, set_by = excluded.set_by, updated_at = now()`,
        [orgId, digest, decision, note.reason, note.setBy],
      );
      const held = await tx.query<{ id: number }>(`select id from file_indicators where ${digestKind(digestHex)} = $1`, [digest]);
      const anchored = held.rows[0] ? await anchorForOrg(tx, 'file', orgId, held.rows[0].id, reanchor) : undefined;
      const moved = await moveDecision(tx, 'file', orgId, digest);
      // The change's version: the feed second of the record the organization's feed now carries.
      return anchored ?? moved;
    });
  }

  async byDigest(orgId: number, digestHex: string): Promise<FileRow | undefined> {
    const kind = digestKind(digestHex);
    const res = await this.db.query<FileRow>(`${SELECT_WITH_BYTES} where i.${kind} = $2`, [orgId, Buffer.from(digestHex, 'hex')]);
    return res.rows[0];
  }

  /** The archive searched by deep scan; the organization's decisions apply there too. */
  async archivedByDigest(orgId: number, digestHex: string): Promise<FileRow | undefined> {
    const kind = digestKind(digestHex);
    const res = await this.db.query<FileRow>(
      `select ${COLUMNS}, null as file_bytes, true as archived from file_archive i ${DECISION_JOIN} where i.${kind} = $2 limit 1`,
      [orgId, Buffer.from(digestHex, 'hex')],
    );
    return res.rows[0];
  }

  aggregates(indicatorId: number): Promise<ReportAggregate[]> {
    return reportAggregates(this.db, 'file', indicatorId);
  }

  /** The feeds' first second not settled yet (a page's exclusive upper bound before any delay). */
  completeBefore(): Promise<number> {
    return completeBefore(this.db);
  }

  /** A file as organization $1 sees it, by its id (no sample bytes). */
  /** The record of this id the organization's feed carries: a file, or its decision record on a digest nobody reported. */
  async byId(orgId: number, id: number): Promise<FileRow | undefined> {
    const res = await this.db.query<FileRow>(heldOrDecisionRecord('file', SELECT, DECISION_RECORD, { indicator: 'i.id = $2', decision: 'd.id = $2' }), [orgId, id]);
    return res.rows[0];
  }

  /** As NamedIndicatorStore.decayingBetween, for files. */
  async decayingBetween(orgId: number, offsets: readonly number[], after: number, before: number): Promise<FileRow[]> {
    const end = decayEndSql(EFFECTIVE, '$2');
    const res = await this.db.query<FileRow>(
      `${SELECT} where d.decision is distinct from 0 and d.decision is distinct from 1 and ${end} > ${EFFECTIVE.ts} and ${end} > $3 and ${end} < $4`,
      [orgId, offsets, after, before],
    );
    return res.rows;
  }

  /**
   * A feed page for one organization over the pairs it sees. `minScore` applies the decision
   * precedence: blacklisted files always pass, the rest by s0; whitelisted files pass too (with
   * decision 0), so a follower learns of the whitelist. The organization's decision records on
   * digests nobody reported pass whatever their decision (a clear is delivered with decision
   * null), on pages the type, name and tag filters do not narrow (such a record has none of them).
   */
  async feedPage(orgId: number, since: number, pageSize: number, delaySeconds: number, filter: FileFeedFilter, settled?: number): Promise<FileRow[]> {
    const complete = settled ?? (await completeBefore(this.db));
    const upper = Math.min(complete, complete - delaySeconds + 1);
    const params: unknown[] = [orgId, filter.minScore];
    const where: string[] = [];
    if (filter.fileType !== undefined) {
      params.push(filter.fileType);
      where.push(`i.file_type = $${params.length}`);
    }
    if (filter.fileName !== undefined) {
      params.push(filter.fileName);
      where.push(`i.file_name = $${params.length}`);
    }
    if (filter.tags !== undefined && filter.tags.length > 0) {
      params.push(filter.tags);
      where.push(`i.tags && $${params.length}::text[]`);
    }
    return anchoredPage<FileRow>(
      this.db,
      'file',
      { columns, joins: DECISION_JOIN, where: (e) => [`(d.decision in (0, 1) or ${e.score} >= $2)`, ...where], params, decisionColumns: where.length === 0 ? DECISION_RECORD : undefined },
      { since, upper, pageSize },
    );
  }

  private listSql(filter: ScoreListFilter, digest: DigestKind, after: number | null, upTo: number | null, params: unknown[]): string {
    return scoreListSql('file', DECISION_JOIN.replace('org_id = $1', 'org_id = $ORG'), filter, after, upTo, params, {
      held: `upper(encode(i.${digest}, 'hex'))`,
      heldWhere: `i.${digest} is not null`,
      decided: "upper(encode(d.digest, 'hex'))",
      decidedWhere: `octet_length(d.digest) = ${DIGEST_BYTES[digest]}`,
    });
  }

  /** Entries of the score list that carry `digest`, after < id <= upTo, by id; `hex` is that digest. */
  async listRows(filter: ScoreListFilter, digest: DigestKind, after: number | null, upTo: number | null, limit: number): Promise<Array<{ id: number; hex: string }>> {
    const params: unknown[] = [];
    const rows = await listRows(this.db, this.listSql(filter, digest, after, upTo, params), params, limit);
    return rows.map((r) => ({ id: r.id, hex: r.value }));
  }

  listBoundary(filter: ScoreListFilter, digest: DigestKind, after: number | null, n: number) {
    const params: unknown[] = [];
    return listBoundary(this.db, this.listSql(filter, digest, after, null, params), params, n);
  }

  listVersion(filter: ScoreListFilter, digest: DigestKind, after: number | null, upTo: number | null) {
    const params: unknown[] = [];
    return listVersion(this.db, this.listSql(filter, digest, after, upTo, params), params);
  }

  decisionsVersion(orgId: number): Promise<string> {
    return decisionsVersion(this.db, 'file', orgId);
  }

  /** Bulk load of the archive (generators and imports): one multi-row insert per call. */
  async archive(rows: readonly ArchivedFile[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.query(
      `insert into file_archive (md5, sha1, sha256, file_type, file_name, score, ts, entry_ts, tags)
       select u.md5, u.sha1, u.sha256, u.file_type, u.file_name, u.score, u.ts, u.ts, '{}'::text[]
       from unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::text[], $5::text[], $6::int[], $7::bigint[])
         as u(md5, sha1, sha256, file_type, file_name, score, ts)`,
      [rows.map((r) => r.md5), rows.map((r) => r.sha1), rows.map((r) => r.sha256), rows.map((r) => r.file_type), rows.map((r) => r.file_name),
        rows.map((r) => r.score), rows.map((r) => r.ts)],
    );
  }
}
