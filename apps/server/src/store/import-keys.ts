import type { Db } from './db.ts';

/** The keys of rows a bulk import reported (migration 0020): claimed before the report, released when it fails. */
export class ImportKeyStore {
  constructor(private readonly db: Db) {}

  /** Whether the key was new for the organization (false: an earlier import reported the row). */
  async claim(orgId: number, key: string): Promise<boolean> {
    const res = await this.db.query('insert into import_keys (org_id, key) values ($1, $2) on conflict do nothing returning key', [orgId, key]);
    return res.rows.length === 1;
  }

  async release(orgId: number, key: string): Promise<void> {
    await this.db.query('delete from import_keys where org_id = $1 and key = $2', [orgId, key]);
  }
}
