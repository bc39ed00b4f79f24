import type { Db } from './db.ts';
import { COLUMNS, DECISION_RECORD, digestKind, type FileRow } from './files.ts';
import { unheldDecisions } from './indicator-sql.ts';
import { LookupBatcher } from './lookup-batcher.ts';

const KIND = { md5: 1, sha1: 2, sha256: 3 } as const;

/** The file carrying the digest, by the kind the digest's length names (1 md5, 2 sha1, 3 sha256). */
const MAIN = `select * from file_indicators f where q.kind = 1 and f.md5 = decode(q.hex, 'hex')
    union all select * from file_indicators f where q.kind = 2 and f.sha1 = decode(q.hex, 'hex')
    union all select * from file_indicators f where q.kind = 3 and f.sha256 = decode(q.hex, 'hex')`;
/** One archived row carrying the digest (as `FileStore.archivedByDigest`: any one). */
const ARCHIVE = `(select * from file_archive a where q.kind = 1 and a.md5 = decode(q.hex, 'hex') limit 1)
    union all (select * from file_archive a where q.kind = 2 and a.sha1 = decode(q.hex, 'hex') limit 1)
    union all (select * from file_archive a where q.kind = 3 and a.sha256 = decode(q.hex, 'hex') limit 1)`;
// As FileStore's DECISION_JOIN, for each key's own organization.
const DECISION = `left join lateral (
    select decision from file_decisions
    where org_id = q.org_id and digest in (i.md5, i.sha1, i.sha256)
    order by updated_at desc limit 1
  ) d on true`;

/**
 * `FileStore.byDigest` for many (organization, digest) keys in one statement, and for the keys
 * marked `deep`, `FileStore.archivedByDigest` too (the route reads the archive only when the
 * main store has no such file; asking both at once saves the second round trip). `k` is the
 * key's 1-based position. A digest nobody reported on which the key's organization took a
 * decision answers with that decision's record (migration 0018), as the main row: the record its
 * feed holds, a cleared one too (decision null).
 */
const LOOKUP_MANY = `with q as (
    select * from unnest($1::bigint[], $2::text[], $3::smallint[], $4::boolean[]) with ordinality as q(org_id, hex, kind, deep, k)
  )
  select q.k::integer as k, false as archived, ${COLUMNS}, i.file_bytes
  from q cross join lateral (${MAIN}) i ${DECISION}
  union all
  select q.k::integer as k, true as archived, ${COLUMNS}, null::bytea as file_bytes
  from q cross join lateral (${ARCHIVE}) i ${DECISION}
  where q.deep
  union all
  select q.k::integer as k, false as archived, r.*, null::bytea as file_bytes
  from q cross join lateral (select ${DECISION_RECORD} ${unheldDecisions('file', 'q.org_id')} and d.digest = decode(q.hex, 'hex')) r`;

export interface FileLookupKey {
  orgId: number;
  /** Hex digest of 32, 40 or 64 digits, any case (validated by the route). */
  digest: string;
  /** Also read the archive (deep scan). */
  deep: boolean;
}

export interface FileLookupResult {
  /** The file in the main store, with its sample bytes. */
  main: FileRow | undefined;
  /** The archived row (deep keys only), as `archivedByDigest` returns it. */
  archived: FileRow | undefined;
}

/** Answers for `keys`, in their order (one statement). */
export async function lookupFiles(db: Db, keys: readonly FileLookupKey[]): Promise<FileLookupResult[]> {
  const res = await db.query<FileRow & { k: number; archived: boolean }>(
    LOOKUP_MANY,
    [keys.map((k) => k.orgId), keys.map((k) => k.digest), keys.map((k) => KIND[digestKind(k.digest)]), keys.map((k) => k.deep)],
    { name: 'rampart_files_lookup_many' },
  );
  const out = keys.map((): FileLookupResult => ({ main: undefined, archived: undefined }));
  for (const { k, archived, ...row } of res.rows) {
    const slot = out[k - 1]!;
    if (archived) slot.archived ??= { ...row, archived: true };
    else slot.main ??= row;
  }
  return out;
}

/**
 * The look-ups of `GET /files/{digest}` on one replica, batched (see LookupBatcher): as fresh as
 * one query per request. Rows are shared between callers that asked for the same key at once:
 * read them, do not change them.
 */
export class FileLookup {
  private readonly batcher: LookupBatcher<FileLookupKey, FileLookupResult>;

  constructor(db: Db, options: { maxInFlight?: number; maxBatch?: number } = {}) {
    this.batcher = new LookupBatcher({
      id: (k) => `${k.orgId} ${k.digest.toLowerCase()} ${k.deep ? 'deep' : ''}`,
      run: (keys) => lookupFiles(db, keys),
      ...options,
    });
  }

  /** The file in the main store and, when `deep`, the archived row carrying the digest. */
  lookup(orgId: number, digest: string, deep: boolean): Promise<FileLookupResult> {
    return this.batcher.load({ orgId, digest, deep });
  }
}
