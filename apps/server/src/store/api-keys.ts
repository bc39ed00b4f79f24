import type { Queryable } from './db.ts';
import type { Organization } from './organizations.ts';
import type { UserRow } from './users.ts';

export interface ApiKeyRow {
  id: number;
  key_id: string;
  user_id: number;
  label: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/** What authentication needs in one round trip: the key, its user and the user's organization. */
export interface KeyPrincipal {
  key: ApiKeyRow & { secret_hash: string };
  user: UserRow;
  org: Organization;
}

export class ApiKeyStore {
  constructor(private readonly db: Queryable) {}

  async create(input: { keyId: string; userId: number; secretHash: string; label?: string }): Promise<ApiKeyRow> {
    const res = await this.db.query<ApiKeyRow>(
      `insert into api_keys (key_id, user_id, secret_hash, label) values ($1, $2, $3, $4)
       returning id, key_id, user_id, label, created_at, last_used_at, revoked_at`,
      [input.keyId, input.userId, input.secretHash, input.label ?? ''],
    );
    return res.rows[0]!;
  }

  async principal(keyId: string): Promise<KeyPrincipal | undefined> {
    const res = await this.db.query<Record<string, never>>(
      `select row_to_json(k) as key, row_to_json(u) as user, row_to_json(o) as org
       from api_keys k join users u on u.id = k.user_id join organizations o on o.id = u.org_id
       where k.key_id = $1`,
      [keyId],
    );
    const row = res.rows[0] as { key: KeyPrincipal['key']; user: UserRow; org: Organization } | undefined;
    if (!row) return undefined;
    return { key: row.key, user: row.user, org: row.org };
  }

  async touch(keyId: string): Promise<void> {
    await this.db.query('update api_keys set last_used_at = now() where key_id = $1', [keyId]);
  }

  async revoke(keyId: string): Promise<boolean> {
    const res = await this.db.query('update api_keys set revoked_at = now() where key_id = $1 and revoked_at is null', [keyId]);
    return res.rowCount > 0;
  }

  async listForOrg(orgId: number): Promise<Array<ApiKeyRow & { username: string }>> {
    const res = await this.db.query<ApiKeyRow & { username: string }>(
      `select k.id, k.key_id, k.user_id, k.label, k.created_at, k.last_used_at, k.revoked_at, u.username
       from api_keys k join users u on u.id = k.user_id where u.org_id = $1 order by k.id`,
      [orgId],
    );
    return res.rows;
  }

  /**
   * Revokes a key only when it belongs to a user of `orgId` (an admin cannot reach other
   * organizations) whose role is at most `maxRole` (an admin cannot revoke an operator's key).
   */
  async revokeInOrg(keyId: string, orgId: number, maxRole: number): Promise<'revoked' | 'already' | 'unknown' | 'higher_role'> {
    const res = await this.db.query<{ allowed: boolean; revoked_now: boolean | null }>(
      `with target as (
         select k.id, u.role <= $3 as allowed from api_keys k join users u on u.id = k.user_id where k.key_id = $1 and u.org_id = $2
       ), done as (
         update api_keys k set revoked_at = coalesce(k.revoked_at, now()) from target t where k.id = t.id and t.allowed
         returning (k.revoked_at = now()) as revoked_now
       )
       select t.allowed, d.revoked_now from target t left join done d on true`,
      [keyId, orgId, maxRole],
    );
    const row = res.rows[0];
    if (!row) return 'unknown';
    if (!row.allowed) return 'higher_role';
    return row.revoked_now ? 'revoked' : 'already';
  }
}
