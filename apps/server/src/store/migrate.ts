import { readdirSync, readFileSync } from 'node:fs';
import { serverPath } from '../paths.ts';
import type { Db } from './db.ts';

export const MIGRATIONS_DIR = serverPath('migrations');
const FILE_PATTERN = /^(\d{4})_[a-z0-9_]+\.sql$/;
// Serializes migrations across server replicas starting against one PostgreSQL.
const ADVISORY_LOCK_KEY = 7_231_001;

const LEDGER_DDL = `create table if not exists schema_migrations (
  version text primary key,
  name text not null,
  applied_at timestamptz not null default now()
)`;

export interface Migration {
  version: string;
  name: string;
  sql: string;
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => FILE_PATTERN.test(f))
    .sort()
    .map((name) => ({ version: name.slice(0, 4), name, sql: readFileSync(`${dir}/${name}`, 'utf8') }));
}

/** Applies every migration not yet recorded, each in its own transaction. Returns the names applied. */
export async function migrate(db: Db, migrations = loadMigrations()): Promise<string[]> {
  const applied: string[] = [];
  for (const m of migrations) {
    const done = await db.transaction(async (tx) => {
      if (db.kind === 'postgres') await tx.query('select pg_advisory_xact_lock($1)', [ADVISORY_LOCK_KEY]);
      await tx.exec(LEDGER_DDL);
      const seen = await tx.query('select 1 from schema_migrations where version = $1', [m.version]);
      if (seen.rowCount > 0) return false;
      await tx.exec(m.sql);
      await tx.query('insert into schema_migrations (version, name) values ($1, $2)', [m.version, m.name]);
      return true;
    });
    if (done) applied.push(m.name);
  }
  return applied;
}
