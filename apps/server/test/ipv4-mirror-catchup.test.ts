import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mirrorChangesSince, mirrorSnapshot, ROW_BYTES, type MirrorChanges } from '../src/store/ipv4-list-mirror.ts';
import type { Queryable, Store } from '../src/store/index.ts';
import { driverCases, postgresAvailable } from './support/databases.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

const rowsIn = (c: MirrorChanges) => (c.rows ? c.rows.byteLength / ROW_BYTES : 0);

/**
 * The list mirror's catch-up beside a transaction left open (only PostgreSQL runs one beside
 * others): every change is read once, not again at each catch-up for as long as the old
 * transaction runs, and the old transaction's own rows are read when it commits.
 */
describe.runIf(postgresAvailable)('IPv4 mirror catch-up beside a long-open transaction on PostgreSQL', () => {
  let store: Store;

  beforeAll(async () => {
    store = await driverCases().find((d) => d.name === 'postgres')!.open();
  });
  afterAll(async () => {
    await store.close();
  });

  const insert = (q: Queryable, gid: string, network: string) =>
    q.query(`insert into ipv4_indicators (gid, network, is_network, score, ts, entry_ts) values ($1, $2::cidr, false, 500, 1, 1)`, [gid, network]);

  it('reads each change once, and the open transaction’s rows when it commits', async () => {
    const start = (await mirrorSnapshot(sqlOf(store))).since;
    let opened!: () => void;
    let release!: () => void;
    const isOpen = new Promise<void>((r) => (opened = r));
    const gate = new Promise<void>((r) => (release = r));
    const long = sqlOf(store).transaction(async (tx) => {
      await tx.query('select pg_current_xact_id()');
      opened();
      await gate;
      await insert(tx, 'RMP-RULE-GID-LONG', '198.51.100.99/32');
    });
    await isOpen;
    for (let k = 0; k < 50; k++) await insert(sqlOf(store), `RMP-RULE-GID-C${k}`, `198.51.100.${k}/32`);

    const first = await mirrorChangesSince(sqlOf(store), start);
    expect(rowsIn(first)).toBe(50);
    expect(first.since.xip.length).toBeGreaterThan(0);
    // The open transaction is older than the 50 rows: they are not read again.
    const second = await mirrorChangesSince(sqlOf(store), first.since);
    expect(rowsIn(second)).toBe(0);

    release();
    await long;
    const third = await mirrorChangesSince(sqlOf(store), second.since);
    expect(rowsIn(third)).toBe(1);
    expect(rowsIn(await mirrorChangesSince(sqlOf(store), third.since))).toBe(0);
  });
});
