import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from './db.ts';
import { openPglite } from './pglite-driver.ts';

/*
 * Named statements on the embedded store are prepared once and executed by name (the report
 * batch's statements spent most of their time being parsed and planned again on every call).
 * They must answer exactly what the unnamed path answers.
 */
describe('PGlite driver: named statements', () => {
  let db: Db;
  const sql = `select $1::bigint as n, $2::jsonb as doc, $3::bigint[] as ids, $4::text as t, $5::boolean as b, $6::cidr as net`;
  const params = [42, JSON.stringify({ a: [1, 'x'] }), [7, 8], null, true, '10.0.0.0/8'];

  beforeAll(async () => {
    db = await openPglite(undefined);
    await db.exec(`create table t (id bigserial primary key, v text not null)`);
  });
  afterAll(async () => {
    await db?.close();
  });

  it('is prepared once in PostgreSQL and reused by later calls', async () => {
    await db.query(sql, params, { name: 'test_named_prepared' });
    await db.query(sql, params, { name: 'test_named_prepared' });
    const listed = await db.query<{ name: string }>(`select name from pg_prepared_statements where name like 'test_named_%' order by name`);
    expect(listed.rows).toEqual([{ name: 'test_named_prepared' }]);
  });

  it('answers as the unnamed path does: parameters, types, nulls, row counts', async () => {
    const named = await db.query(sql, params, { name: 'test_named_types' });
    const plain = await db.query(sql, params);
    expect(named).toEqual(plain);
    expect(named.rows).toEqual([{ n: 42, doc: { a: [1, 'x'] }, ids: [7, 8], t: null, b: true, net: '10.0.0.0/8' }]);

    const insert = `insert into t (v) select unnest($1::text[]) returning id`;
    expect((await db.query(insert, [['a', 'b', 'c']], { name: 'test_named_insert' })).rowCount).toBe(3);
    expect((await db.query(`update t set v = v || $1 where id <= $2`, ['!', 2], { name: 'test_named_update' })).rowCount).toBe(2);
    expect((await db.query(`select v from t order by id`)).rows).toEqual([{ v: 'a!' }, { v: 'b!' }, { v: 'c' }]);
  });

  it('fails a statement with PostgreSQL error code, and the next call works', async () => {
    const dup = `insert into t (id, v) values ($1, $2)`;
    await expect(db.query(dup, [1, 'again'], { name: 'test_named_dup' })).rejects.toMatchObject({ code: '23505' });
    await expect(db.transaction((tx) => tx.query(dup, [1, 'again'], { name: 'test_named_dup' }))).rejects.toMatchObject({ code: '23505' });
    expect((await db.query(dup, [100, 'new'], { name: 'test_named_dup' })).rowCount).toBe(1);
    await expect(db.query(`select nope from t`, [], { name: 'test_named_bad' })).rejects.toMatchObject({ code: '42703' });
  });

  it('runs inside a transaction and rolls back with it', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query(`insert into t (v) values ($1)`, ['rolled back'], { name: 'test_named_tx' });
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    await db.transaction((tx) => tx.query(`insert into t (v) values ($1)`, ['kept'], { name: 'test_named_tx' }));
    expect((await db.query(`select v from t where v in ('rolled back', 'kept')`)).rows).toEqual([{ v: 'kept' }]);
  });

  it('refuses one name for two SQL texts', async () => {
    await db.query(`select 1 as one`, [], { name: 'test_named_once' });
    await expect(db.query(`select 2 as two`, [], { name: 'test_named_once' })).rejects.toThrow('statement name test_named_once is already used for another SQL text');
  });
});

/*
 * On disk, a COMMIT's WAL fsync runs off the thread: the event loop reads and queues requests
 * meanwhile, and the transaction settles only once the commit is on disk.
 */
describe('PGlite driver on disk: the commit fsync', { timeout: 120_000 }, () => {
  let dir: string;
  let db: Db;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rampart-pglite-driver-'));
    db = await openPglite(join(dir, 'data'));
    await db.exec(`create table t (id bigserial primary key, v text not null)`);
  });
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lets the event loop turn while the WAL is synced, and settles after the sync', async () => {
    for (let round = 0; round < 3; round += 1) {
      const before = db.stats().syncs!;
      let seenDuringCommit: number | null = null;
      await db.transaction(async (tx) => {
        await tx.query(`insert into t (v) values ($1)`, [`row ${round}`]);
        // Runs on the next turn of the loop: only if the commit gives one up.
        setImmediate(() => (seenDuringCommit = db.stats().syncs!));
      });
      expect(seenDuringCommit).toBe(before);
      expect(db.stats().syncs! - before).toBeGreaterThanOrEqual(1);
    }
    expect((await db.query(`select count(*)::int as n from t`)).rows).toEqual([{ n: 3 }]);
  });
});
