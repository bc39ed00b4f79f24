import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations, migrate, openStore, type Store } from '../src/store/index.ts';
import { createApiKey, createOrganization, createUser } from '../src/services/operators/admin.ts';
import { createTestDatabase, driverCases, postgresAvailable } from './support/databases.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

describe.each(driverCases())('store on $name', (driver) => {
  let store: Store;
  beforeAll(async () => {
    store = await driver.open();
  });
  afterAll(async () => {
    await store.close();
  });

  it('records migrations and applies none twice', async () => {
    expect(await migrate(sqlOf(store))).toEqual([]);
    const res = await sqlOf(store).query<{ version: string }>('select version from schema_migrations order by version');
    expect(res.rows.map((r) => r.version)[0]).toBe('0001');
  });

  it('checks an up-to-date database without a transaction, and applies a missing migration', async () => {
    const db = sqlOf(store);
    let transactions = 0;
    const counting = { ...db, transaction: <T>(fn: Parameters<typeof db.transaction<T>>[0]) => ((transactions += 1), db.transaction(fn)) };
    expect(await migrate(counting)).toEqual([]);
    expect(transactions).toBe(0);
    const extra = { version: '9999', name: '9999_startup_probe.sql', sql: 'create table startup_probe (id int)' };
    expect(await migrate(counting, [...loadMigrations(), extra])).toEqual(['9999_startup_probe.sql']);
    expect(transactions).toBe(loadMigrations().length + 1);
    expect(await migrate(counting, [...loadMigrations(), extra])).toEqual([]);
    expect(transactions).toBe(loadMigrations().length + 1);
    await db.exec("drop table startup_probe; delete from schema_migrations where version = '9999'");
  });

  it('creates organizations with prefixed ids and exact figures', async () => {
    const org = await createOrganization(store, { name: 'Acme CERT', trust: 0.85, credits: 40 });
    expect(org.gid).toMatch(/^RMP-GID-[0-9A-F]{32}$/);
    expect(org).toMatchObject({ name: 'Acme CERT', trust: 0.85, delay: '0', credit_tokens: 40, debit_tokens: 0, is_public: 0 });
    expect(await store.orgs.byGid(org.gid)).toEqual(org);
    await expect(createOrganization(store, { name: 'Acme CERT' })).rejects.toMatchObject({ code: 'conflict' });
  });

  it('debits only what the balance covers and refunds exactly', async () => {
    const org = await createOrganization(store, { name: 'Coins Ltd', credits: 5 });
    expect(await store.orgs.debit(org.id, 3)).toBe(2);
    expect(await store.orgs.debit(org.id, 3)).toBeUndefined();
    expect(await store.orgs.refund(org.id, 3)).toBe(5);
    const after = await store.orgs.byId(org.id);
    expect(after).toMatchObject({ credit_tokens: 5, debit_tokens: 0 });
  });

  it('stores only a hash of an API key and resolves its principal', async () => {
    const org = await createOrganization(store, { name: 'Keys Inc' });
    const user = await createUser(store, { orgGid: org.gid, username: 'kim@keys.example', role: 2, name: 'Kim', surname: 'Lee' });
    expect(user.guid).toMatch(/^RMP-GUID-[0-9A-F]{32}$/);
    const { keyId, key } = await createApiKey(store, { username: user.username, label: 'ci' });
    const secret = key.slice(`rmp_${keyId}_`.length);
    expect(secret).toHaveLength(43);
    const raw = await sqlOf(store).query<Record<string, unknown>>('select * from api_keys where key_id = $1', [keyId]);
    expect(raw.rows[0]!.secret_hash).toBe(createHash('sha256').update(secret).digest('hex'));
    expect(JSON.stringify(raw.rows[0])).not.toContain(secret);
    const p = await store.keys.principal(keyId);
    expect(p?.user).toMatchObject({ guid: user.guid, role: 2, unsuccessful_login: 0 });
    expect(p?.org).toMatchObject({ gid: org.gid, trust: 0.5 });
    expect(await store.keys.revoke(keyId)).toBe(true);
    expect(await store.keys.revoke(keyId)).toBe(false);
  });

  it('rolls a failed transaction back', async () => {
    await expect(
      sqlOf(store).transaction(async (tx) => {
        await tx.query("insert into organizations (gid, name, trust) values ('RMP-GID-TX', 'tx', 0.1)");
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await store.orgs.byGid('RMP-GID-TX')).toBeUndefined();
  });
});

describe.skipIf(!postgresAvailable)('PostgreSQL notifications', () => {
  it('keep arriving after the server drops the listening session, those sent meanwhile included', async () => {
    const db = await createTestDatabase();
    const store = await openStore({ databaseUrl: db.url });
    try {
      const got: string[] = [];
      await sqlOf(store).listen('rampart_test_channel', (payload) => got.push(payload));
      const until = async (what: string, ok: () => boolean) => {
        const deadline = Date.now() + 15_000;
        while (!ok()) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      await sqlOf(store).notify('rampart_test_channel', 'one');
      await until('the first notification', () => got.includes('one'));

      const killed = await sqlOf(store).query<{ n: number }>(
        `select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
         where datname = current_database() and query = 'listen rampart_test_channel'`,
      );
      expect(killed.rows[0]!.n).toBe(1);
      // Notifications sent while the listener is gone (and while it comes back) are not lost, as
      // bare NOTIFY would lose them: they are stored and replayed, each once, in order.
      const sent = ['one'];
      for (let i = 0; i < 5; i += 1) {
        await sqlOf(store).notify('rampart_test_channel', `during-${i}`);
        sent.push(`during-${i}`);
      }
      await until('the reopened listener', () => sqlOf(store).health().listening);
      await sqlOf(store).notify('rampart_test_channel', 'after');
      sent.push('after');
      // Notifications reach a listener in commit order: once a marker sent last is in, a
      // notification delivered twice (replayed and live) would be in before it.
      await sqlOf(store).notify('rampart_test_channel', 'marker');
      await until('the marker', () => got.includes('marker'));
      expect(got).toEqual([...sent, 'marker']);
    } finally {
      await store.close();
      await db.drop();
    }
  });
});
