import { migrate } from './migrate.ts';
import { openPglite } from './pglite-driver.ts';
import { initdbInChild } from './pglite-initdb.ts';

/**
 * dist/pgdata-template, made by scripts/build.mjs: initdb (in a child process), then every
 * migration, so that a first start copies a migrated store and only reads its ledger (applying
 * the migrations on PGlite was seconds of a first start). It holds no secret: the ones a store
 * keeps (cursor and agent-key secrets) are drawn at their first use, in each store.
 */
export async function buildDataDirTemplate(dir: string): Promise<void> {
  await initdbInChild(dir);
  const db = await openPglite(dir, { owner: 'server' });
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
}
