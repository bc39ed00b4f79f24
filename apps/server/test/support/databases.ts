import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openStore, type Store } from '../../src/store/index.ts';

/**
 * The drivers a store test runs on: PGlite always, PostgreSQL when DATABASE_URL is set.
 * In CI DATABASE_URL is required, so the PostgreSQL half can never skip there silently.
 */
export interface DriverCase {
  name: 'pglite' | 'postgres';
  open(): Promise<Store>;
}

const baseUrl = process.env.DATABASE_URL;
if (!baseUrl && process.env.CI) throw new Error('CI must set DATABASE_URL: the PostgreSQL tests may not skip there');
if (!baseUrl) console.warn('DATABASE_URL is not set: PostgreSQL store tests are skipped (they run in CI)');

export const postgresAvailable = Boolean(baseUrl);

/** A new, empty database on the server DATABASE_URL names; dropped by the returned function. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!baseUrl) throw new Error('DATABASE_URL is not set');
  const name = `rampart_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: baseUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/** Opens a migrated store on each driver; close() also drops the PostgreSQL database. */
export function driverCases(): DriverCase[] {
  const cases: DriverCase[] = [{ name: 'pglite', open: () => openStore({}) }];
  if (baseUrl) {
    cases.push({
      name: 'postgres',
      async open() {
        const db = await createTestDatabase();
        const store = await openStore({ databaseUrl: db.url });
        return {
          ...store,
          async close() {
            await store.close();
            await db.drop();
          },
        };
      },
    });
  }
  return cases;
}
