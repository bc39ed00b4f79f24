import { randomBytes } from 'node:crypto';
import type { Db } from './db.ts';

/** Secrets shared by every replica on one database, created on first use. */
export class SecretStore {
  constructor(private readonly db: Db) {}

  async get(name: string): Promise<string> {
    await this.db.query('insert into server_secrets (name, value) values ($1, $2) on conflict (name) do nothing', [name, randomBytes(32).toString('base64url')]);
    const res = await this.db.query<{ value: string }>('select value from server_secrets where name = $1', [name]);
    return res.rows[0]!.value;
  }
}
