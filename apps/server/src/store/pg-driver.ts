import pg from 'pg';
import type { Db, NotificationHandler, QueryOptions, QueryResult, Transaction } from './db.ts';

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** int8 and numeric come back as JS numbers, as PGlite returns them, so both drivers agree. */
const types = {
  getTypeParser(oid: number, format?: string) {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

export interface PgDriverOptions {
  connectionString: string;
  max?: number;
}

export async function openPostgres(options: PgDriverOptions): Promise<Db> {
  const pool = new pg.Pool({ connectionString: options.connectionString, max: options.max ?? 10, types });
  // Idle-client errors (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  await pool.query('select 1');

  // LISTEN needs one session that stays open. When PostgreSQL drops it (restart, failover,
  // idle timeout, pg_terminate_backend), it is reopened with back-off and every channel is
  // listened to again, so a replica never goes deaf silently.
  let listener: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;
  let retryMs = 100;
  const handlers = new Map<string, Set<NotificationHandler>>();

  function lost(client: pg.Client) {
    if (listener !== client) return;
    listener = undefined;
    client.removeAllListeners('notification');
    void client.end().catch(() => {});
    if (closed || handlers.size === 0) return;
    const wait = retryMs;
    retryMs = Math.min(retryMs * 2, 10_000);
    setTimeout(() => {
      if (!closed) ensureListener().catch(() => lost(client));
    }, wait).unref();
  }

  async function connectListener(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: options.connectionString, types });
    client.on('error', () => lost(client));
    client.on('end', () => lost(client));
    client.on('notification', (msg) => {
      for (const h of handlers.get(msg.channel) ?? []) h(msg.payload ?? '');
    });
    await client.connect();
    listener = client;
    for (const channel of handlers.keys()) await client.query(`listen ${channel}`);
    retryMs = 100;
    return client;
  }

  async function ensureListener(): Promise<pg.Client> {
    if (listener) return listener;
    connecting ??= connectListener().finally(() => {
      connecting = undefined;
    });
    return connecting;
  }

  const query = async <T>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<T>> => {
    const res = options?.name
      ? await pool.query({ name: options.name, text: sql, values: params as unknown[] | undefined })
      : await pool.query(sql, params as unknown[] | undefined);
    return { rows: res.rows as T[], rowCount: res.rowCount ?? 0 };
  };

  return {
    kind: 'postgres',
    query,
    async exec(sql) {
      await pool.query(sql);
    },
    async transaction(fn) {
      const client = await pool.connect();
      const tx: Transaction = {
        async query<T>(sql: string, params?: readonly unknown[], options?: QueryOptions) {
          const res = options?.name
            ? await client.query({ name: options.name, text: sql, values: params as unknown[] | undefined })
            : await client.query(sql, params as unknown[] | undefined);
          return { rows: res.rows as T[], rowCount: res.rowCount ?? 0 };
        },
        async exec(sql: string) {
          await client.query(sql);
        },
      };
      try {
        await client.query('begin');
        const result = await fn(tx);
        await client.query('commit');
        return result;
      } catch (err) {
        await client.query('rollback').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async listen(channel, handler) {
      if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name ${channel}`);
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        const client = await ensureListener();
        // LISTEN is idempotent: a listener opened just now may already have issued it.
        await client.query(`listen ${channel}`);
      } else {
        await ensureListener();
      }
      set.add(handler);
      return async () => {
        set.delete(handler);
      };
    },
    async notify(channel, payload) {
      await pool.query('select pg_notify($1, $2)', [channel, payload]);
    },
    stats() {
      return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
    },
    async close() {
      closed = true;
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => {});
      await pool.end();
    },
  };
}
