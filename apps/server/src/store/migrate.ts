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

/**
 * The versions the ledger records, read without a lock (null when there is no ledger yet). A
 * start on an up-to-date database then costs two statements instead of a transaction per
 * migration (on PGlite, ~14 transactions were a visible part of a restart).
 */
async function recordedVersions(db: Db): Promise<Set<string> | null> {
  const ledger = await db.query<{ t: string | null }>("select to_regclass('schema_migrations')::text as t");
  if (!ledger.rows[0]?.t) return null;
  const res = await db.query<{ version: string }>('select version from schema_migrations');
  return new Set(res.rows.map((r) => r.version));
}

/**
 * Applies every migration not yet recorded, each in its own transaction. Returns the names applied.
 * When the ledger already records every one, nothing is locked or run; otherwise each is checked
 * again under the lock (another replica may be applying them at the same time).
 */
export async function migrate(db: Db, migrations = loadMigrations()): Promise<string[]> {
  const recorded = await recordedVersions(db);
  if (recorded && migrations.every((m) => recorded.has(m.version))) return [];
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
