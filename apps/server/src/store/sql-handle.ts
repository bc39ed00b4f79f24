import type { Db } from './db.ts';

/**
 * The database handle behind a Store. Only store/ and tests may import this module (the
 * boundary rule `sql-only-in-store`): every other layer goes through the Store's classes.
 */
const handles = new WeakMap<object, Db>();

export function attachSql<S extends object>(db: Db, store: S): S {
  handles.set(store, db);
  return store;
}

/** The SQL handle of a store built by storeOver/openStore (tests: seeding, inspecting, faults). */
export function sqlOf(store: object): Db {
  const db = handles.get(store);
  if (!db) throw new Error('not a store built by storeOver');
  return db;
}
