import type { Db } from './db.ts';

/**
 * The database handle behind a Store. Only store/ and tests may import this module (the
 * boundary rule `sql-only-in-store`): every other layer goes through the Store's classes.
 * A module-private symbol key: a store copied with its members (`{ ...store, close }`) keeps it.
 */
const SQL = Symbol('rampart.sql');

export function attachSql<S extends object>(db: Db, store: S): S {
  return Object.assign(store, { [SQL]: db });
}

/** The SQL handle of a store built by storeOver/openStore (tests: seeding, inspecting, faults). */
export function sqlOf(store: object): Db {
  const db = (store as { [SQL]?: Db })[SQL];
  if (!db) throw new Error('not a store built by storeOver');
  return db;
}
